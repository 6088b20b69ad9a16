import Drain
import FaceAnalysis
import Foundation
import PhotoAnalysis
import PhotoDecoding
import SystemSupport

/// `photodrain detect FILE...`: the faces of given photos, without a store.
enum DetectCommand: Command {
    static let spec = CommandSpec(
        name: "detect",
        abstract: "Find faces in photos: detector boxes, each confirmed or rejected by the linear classifier.",
        arguments: "FILE...",
        discussion: """
        Each photo is decoded upright and searched as analysis does: by default BlazeFace over an
        image pyramid in colour, down to --min-face pixels; with --detector cascade, an OpenCV
        cascade on gray at the analysis size, as OpenCV's detectMultiScale does (same pyramid,
        steps and grouping; --scale-factor, --min-neighbors, --min-size and --max-size apply to it).
        Boxes are printed in the photo's own upright pixel coordinates with the classifier's
        probability; for BlazeFace also its score and, for boxes scoring 0.3 or more, its two
        second looks (the box seen again alone, the face 48 and 32 px wide), which the classifier
        weighs. BlazeFace proposes many weak boxes, so its rejected ones are listed (and drawn)
        only with --all-boxes. --annotate writes the photo with its boxes drawn (green confirmed,
        red rejected) as PNG.
        """,
        options: [
            .option("scale-factor", "F", "Cascade: pyramid step between scales (> 1).", default: "1.1"),
            .option("min-neighbors", "N", "Cascade: overlapping raw boxes a face needs.", default: "3"),
            .option("min-size", "PIXELS", "Cascade: smallest face searched, in analysed pixels.", default: "24"),
            .option("max-size", "PIXELS", "Cascade: largest face searched, in analysed pixels (0: no limit).", default: "0"),
            .option("annotate", "OUT.png", "Write the (single) photo with its boxes drawn."),
            .flag("all-boxes", "Also list every rejected box (BlazeFace proposes many weak candidates); --json always has them."),
            .flag("json", "One JSON object per photo."),
        ] + AnalysisOptions.all.filter { $0.name != "memory-limit" },
        positionals: (1, nil),
        examples: [
            ("photodrain detect SampleImages/three-portraits.jpg", "faces of one photo"),
            ("photodrain detect SampleImages/hopper.jpg --annotate /tmp/hopper-faces.png", "a picture of the boxes"),
            ("photodrain detect --min-face 24 group.jpg", "look for smaller faces (slower)"),
            ("photodrain detect --cascade /usr/share/opencv4/lbpcascades/lbpcascade_frontalface.xml *.jpg --json", "OpenCV's LBP cascade instead of BlazeFace"),
        ],
        exitCodes: [(0, "every photo searched"), (1, "weights, cascade or model unreadable"), (64, "usage error"), (65, "a photo could not be decoded")]
    )

    struct Face: Encodable {
        let x, y, width, height, neighbors: Int
        let probability: Float
        let confirmed: Bool
        /// BlazeFace's score, and its second looks when the box got them.
        var detectorScore: Float?
        var secondLooks: [Float]?
    }

    struct Report: Encodable {
        let path: String
        var width: Int?
        var height: Int?
        var analysedWidth: Int?
        var analysedHeight: Int?
        var faces: [Face] = []
        var milliseconds: Double?
        var error: String?
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        var settings = try AnalysisOptions.settings(arguments)
        settings.detection.scaleFactor = try arguments.double("scale-factor", default: 1.1, range: 1.0001...4)
        settings.detection.minNeighbors = try arguments.int("min-neighbors", default: 3, range: 0...1000)
        settings.detection.minSize = try arguments.int("min-size", default: 24, range: 0...100_000)
        settings.detection.maxSize = try arguments.int("max-size", default: 0, range: 0...100_000)
        let pipeline = try FacePipeline(settings: settings)
        let annotate = arguments.string("annotate")
        if annotate != nil && arguments.positionals.count != 1 {
            throw UsageError("--annotate draws one photo: give exactly one FILE", command: spec.name)
        }
        let json = arguments.flag("json")
        let console = Console.shared
        var failed = false
        for path in arguments.positionals {
            var report = Report(path: path)
            let clock = ContinuousClock()
            let start = clock.now
            do {
                let header = try PhotoDecoder.probe(path, maxPixels: settings.maxPixels)
                let upright = header.uprightSize
                let (image, faces) = try pipeline.findFaces(in: path, header: header)
                let scale = Double(upright.width) / Double(image.width)
                report.width = upright.width
                report.height = upright.height
                report.analysedWidth = image.width
                report.analysedHeight = image.height
                report.faces = faces.map { face in
                    let r = face.region
                    return Face(x: Int(Double(r.x) * scale), y: Int(Double(r.y) * scale), width: Int(Double(r.width) * scale),
                                height: Int(Double(r.height) * scale), neighbors: r.neighbors, probability: face.probability,
                                confirmed: face.confirmed,
                                detectorScore: settings.detector == .cascade ? nil : r.detectorScore, secondLooks: r.secondLooks)
                }
                report.milliseconds = ((clock.now - start).milliseconds * 10).rounded() / 10
                if let annotate {
                    let drawn = arguments.flag("all-boxes") || settings.detector == .cascade ? faces : faces.filter(\.confirmed)
                    let boxes = drawn.map { (Detection(x: $0.region.x, y: $0.region.y, width: $0.region.width, height: $0.region.height), $0.confirmed) }
                    let picture = Annotation.draw(boxes: boxes, on: try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb)),
                                                  analysed: image)
                    try ImageEncoder.writePNG(picture, to: annotate)
                }
            } catch let error as DecodeError {
                report.error = "\(error.code.rawValue): \(error.message)"
                failed = true
            }
            if json {
                console.json(report)
            } else if let error = report.error {
                console.out("\(path): \(console.red("error")) \(error)")
            } else {
                let confirmed = report.faces.filter(\.confirmed).count
                console.out("\(path): \(confirmed) face\(confirmed == 1 ? "" : "s") (\(report.faces.count) detector boxes) in \(String(format: "%.1f", report.milliseconds ?? 0)) ms")
                let shown = arguments.flag("all-boxes") ? report.faces : report.faces.filter(\.confirmed)
                for face in shown {
                    var line = "  \(face.confirmed ? "face    " : "rejected") x \(face.x) y \(face.y) \(face.width)x\(face.height)  p \(String(format: "%.3f", face.probability))  \(settings.detector == .cascade ? "neighbours" : "support") \(face.neighbors)"
                    if let score = face.detectorScore {
                        line += "  score \(String(format: "%.2f", score))"
                        if let looks = face.secondLooks { line += " looks " + looks.map { String(format: "%.2f", $0) }.joined(separator: " ") }
                    }
                    console.out(line)
                }
            }
        }
        if let annotate, !failed { console.err("wrote \(annotate)") }

        return failed ? .dataError : .success
    }
}

/// Draws detection boxes onto a photo for `--annotate`.
enum Annotation {
    /// `boxes` are in `analysed` coordinates; they are scaled onto `photo` (RGB, same aspect).
    static func draw(boxes: [(Detection, Bool)], on photo: Image, analysed: Image) -> Image {
        var picture = photo.channels == 3 ? photo : gray2rgb(photo)
        let scale = Double(picture.width) / Double(analysed.width)
        let thickness = max(2, picture.width / 300)
        for (box, confirmed) in boxes {
            let color: (UInt8, UInt8, UInt8) = confirmed ? (40, 220, 60) : (230, 40, 40)
            let x0 = Int(Double(box.x) * scale), y0 = Int(Double(box.y) * scale)
            let x1 = min(picture.width - 1, Int(Double(box.x + box.width) * scale))
            let y1 = min(picture.height - 1, Int(Double(box.y + box.height) * scale))
            for t in 0..<thickness {
                for x in x0...x1 {
                    set(&picture, x, y0 + t, color); set(&picture, x, y1 - t, color)
                }
                for y in y0...y1 {
                    set(&picture, x0 + t, y, color); set(&picture, x1 - t, y, color)
                }
            }
        }
        return picture
    }

    private static func set(_ image: inout Image, _ x: Int, _ y: Int, _ c: (UInt8, UInt8, UInt8)) {
        guard x >= 0, y >= 0, x < image.width, y < image.height else { return }
        image[x, y, 0] = c.0; image[x, y, 1] = c.1; image[x, y, 2] = c.2
    }

    private static func gray2rgb(_ gray: Image) -> Image {
        Image(width: gray.width, height: gray.height, channels: 3) { out in
            for i in 0..<(gray.width * gray.height) { out[i * 3] = gray.pixels[i]; out[i * 3 + 1] = gray.pixels[i]; out[i * 3 + 2] = gray.pixels[i] }
        }
    }
}
