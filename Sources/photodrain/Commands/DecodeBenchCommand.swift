import FaceAnalysis
import Foundation
import PhotoDecoding
import SystemSupport

/// `photodrain bench-decode FILE...`: times the probe and the gray decode at each DCT scale.
enum DecodeBenchCommand: Command {
    static let spec = CommandSpec(
        name: "bench-decode",
        abstract: "Time probe and gray decode of photos at JPEG DCT scales 1/1, 1/2, 1/4 and 1/8.",
        arguments: "FILE...",
        discussion: """
        Each photo is decoded --repeat times at each scale after one warm-up; the median of each is
        printed in milliseconds. Build with -c release before believing a number.
        """,
        options: [
            .option("repeat", "N", "Timed decodes per file and scale.", default: "15"),
            .option("output", "gray|rgb", "Pixel layout to decode to.", default: "gray"),
            .flag("json", "One JSON object per file."),
        ],
        positionals: (1, nil),
        examples: [("photodrain bench-decode big.jpg --repeat 30", "decode timings of one large JPEG")],
        exitCodes: [(0, "timed every file"), (64, "usage error"), (65, "a file could not be decoded")]
    )

    struct Row: Encodable {
        let path: String
        let width: Int
        let height: Int
        let probeMilliseconds: Double
        /// Median decode time by scale denominator ("1", "2", "4", "8").
        let decodeMilliseconds: [String: Double]
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let repeats = try arguments.int("repeat", default: 15, range: 1...10_000)
        let output: DecodeOptions.Output
        switch arguments.string("output") ?? "gray" {
        case "gray": output = .gray
        case "rgb": output = .rgb
        case let other: throw UsageError("--output wants gray or rgb, not '\(other)'", command: spec.name)
        }
        var failed = false
        for path in arguments.positionals {
            switch benchmark(path, repeats: repeats, output: output) {
            case .success(let row):
                if arguments.flag("json") {
                    Console.shared.json(row)
                } else {
                    let medians = row.decodeMilliseconds
                    let scales = medians.keys.sorted { Int($0) ?? 0 < Int($1) ?? 0 }
                        .map { "1/\($0) \(String(format: "%.2f", medians[$0] ?? 0)) ms" }.joined(separator: ", ")
                    Console.shared.out("\(path) \(row.width)x\(row.height): probe \(String(format: "%.3f", row.probeMilliseconds)) ms; \(output.rawValue) decode \(scales)")
                }
            case .failure(let error):
                Console.shared.err("\(path): \(error.code.rawValue): \(error.message)")
                failed = true
            }
        }
        return failed ? .dataError : .success
    }

    /// Times one file: probe, then decode at each scale (PNG has only 1/1).
    static func benchmark(_ path: String, repeats: Int, output: DecodeOptions.Output) -> Result<Row, DecodeError> {
        Result { () throws(DecodeError) -> Row in
            let clock = ContinuousClock()
            let header = try PhotoDecoder.probe(path)
            var probes: [Double] = []
            for _ in 0..<repeats {
                let start = clock.now
                _ = try PhotoDecoder.probe(path)
                probes.append((clock.now - start).milliseconds)
            }
            var medians: [String: Double] = [:]
            for denominator in header.format == .png ? [1] : [1, 2, 4, 8] {
                let target = scaledDimension(min(header.width, header.height), denominator: denominator)
                let options = DecodeOptions(output: output, targetShortSide: target, applyOrientation: false)
                _ = try PhotoDecoder.decode(path, options: options)  // warm-up: file cache, allocator
                var samples: [Double] = []
                for _ in 0..<repeats {
                    let start = clock.now
                    _ = try PhotoDecoder.decode(path, options: options)
                    samples.append((clock.now - start).milliseconds)
                }
                medians["\(denominator)"] = AnalysisBenchmark.median(samples)
            }
            return Row(path: path, width: header.width, height: header.height,
                       probeMilliseconds: AnalysisBenchmark.median(probes), decodeMilliseconds: medians)
        }
    }
}
