import Foundation
import PhotoDecoding
import SystemSupport

/// `photodrain inspect FILE...`: probe each photo, decode it at the scale analysis would use, and
/// report what was found or why it failed.
enum InspectCommand: Command {
    static let spec = CommandSpec(
        name: "inspect",
        abstract: "Probe and decode photos; report format, size, orientation and the decode scale.",
        arguments: "FILE...",
        discussion: """
        Each file (JPEG, PNG, HEIF: HEIC and AVIF, or WebP) is probed (header only), then decoded
        to gray at the scale (JPEG's DCT scale; for HEIF its thumbnail or a 1/2..1/8 reduction; for
        WebP libwebp's rescaler) that puts its short side at or just above --analysis-size. One line per file; a file that cannot be
        decoded gets its error and the rest go on. With --gray-png, the one FILE is decoded at full
        size to upright gray and written as a PNG: the pixels a cascade sees, for comparing
        PhotoDrain's decoders and detectors with OpenCV on the same image.
        """,
        options: [
            .option("analysis-size", "PIXELS", "Short side the decode aims at or just above.", default: "\(Defaults.analysisSize)"),
            .option("max-pixels", "N", "Refuse photos whose header claims more pixels.", default: "\(DecodeOptions.defaultMaxPixels)"),
            .flag("json", "One JSON object per line."),
            .option("gray-png", "OUT.png", "Write the one FILE, upright and full size, as 8-bit gray PNG."),
        ],
        positionals: (1, nil),
        examples: [
            ("photodrain inspect SampleImages/*", "check every sample photo"),
            ("photodrain inspect --json photo.jpg | jq .scale", "machine-readable"),
        ],
        exitCodes: [(0, "every file decoded"), (64, "usage error"), (65, "at least one file could not be decoded")]
    )

    /// One file's result, as printed with --json.
    struct Report: Encodable {
        let path: String
        var format: String?
        var width: Int?
        var height: Int?
        var orientation: Int?
        var fileSize: Int?
        var scale: String?
        /// The embedded thumbnail (WxH) a HEIF decode used instead of the primary image; `scale`
        /// is then relative to it.
        var thumbnail: String?
        var decodedWidth: Int?
        var decodedHeight: Int?
        var decodeMilliseconds: Double?
        var error: ErrorReport?
    }

    struct ErrorReport: Encodable {
        let code: String
        let message: String
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let analysisSize = try arguments.int("analysis-size", default: Defaults.analysisSize, range: 16...100_000)
        let maxPixels = try arguments.int("max-pixels", default: DecodeOptions.defaultMaxPixels, range: 1...Int.max)
        let json = arguments.flag("json")
        if let out = arguments.string("gray-png") {
            guard arguments.positionals.count == 1 else { throw UsageError("--gray-png writes one photo: give one FILE", command: spec.name) }
            let image = try PhotoDecoder.decode(arguments.positionals[0], options: DecodeOptions(output: .gray, maxPixels: maxPixels))
            try ImageEncoder.writePNG(image, to: out)
            Console.shared.err("wrote \(out) (\(image.width)x\(image.height) gray)")
            return .success
        }
        var failures = 0
        for path in arguments.positionals {
            let report = inspect(path, analysisSize: analysisSize, maxPixels: maxPixels)
            if report.error != nil { failures += 1 }
            if json {
                Console.shared.json(report)
            } else {
                Console.shared.out(describe(report))
            }
        }
        if !json && arguments.positionals.count > 1 {
            let ok = arguments.positionals.count - failures
            Console.shared.err("\(ok) decoded, \(failures) failed")
        }
        return failures == 0 ? .success : .dataError
    }

    static func inspect(_ path: String, analysisSize: Int, maxPixels: Int) -> Report {
        var report = Report(path: path)
        do {
            let header = try PhotoDecoder.probe(path, maxPixels: maxPixels)
            report.format = header.format.rawValue
            report.width = header.width
            report.height = header.height
            report.orientation = header.orientation.rawValue
            report.fileSize = header.fileSize
            if let plan = PhotoDecoder.thumbnailPlan(for: header, targetShortSide: analysisSize) {
                report.thumbnail = "\(plan.thumbnail.width)x\(plan.thumbnail.height)"
                report.scale = "1/\(plan.denominator)"
            } else {
                report.scale = "1/\(PhotoDecoder.scaleDenominator(for: header, targetShortSide: analysisSize))"
            }
            let clock = ContinuousClock()
            let start = clock.now
            let image = try PhotoDecoder.decode(path, options: DecodeOptions(
                output: .gray, targetShortSide: analysisSize, maxPixels: maxPixels))
            report.decodeMilliseconds = (clock.now - start).milliseconds
            report.decodedWidth = image.width
            report.decodedHeight = image.height
        } catch {
            report.error = ErrorReport(code: error.code.rawValue, message: error.message)
        }
        return report
    }

    static func describe(_ report: Report) -> String {
        if let error = report.error {
            return "\(report.path): \(Console.shared.red("error")) \(error.code): \(error.message)"
        }
        let format = report.format ?? "?"
        let w = report.width ?? 0, h = report.height ?? 0
        let size = formatBytes(report.fileSize ?? 0)
        let ms = String(format: "%.1f", report.decodeMilliseconds ?? 0)
        let source = report.thumbnail.map { "thumbnail \($0) " } ?? ""
        return "\(report.path): \(format) \(w)x\(h) orientation \(report.orientation ?? 1) \(size) "
            + "\(source)scale \(report.scale ?? "1/1") -> \(report.decodedWidth ?? 0)x\(report.decodedHeight ?? 0) gray (\(ms) ms)"
    }
}
