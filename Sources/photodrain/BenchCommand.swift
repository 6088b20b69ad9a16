import Drain
import FaceAnalysis
import Foundation
import PhotoDecoding

/// `photodrain bench [DIR|FILE...]`: times the analysis core stage by stage.
enum BenchCommand: Command {
    static let spec = CommandSpec(
        name: "bench",
        abstract: "Time the analysis core stage by stage: probe, decode, resize, integral, detect, classify.",
        arguments: "[DIR|FILE...]",
        discussion: """
        Each photo is analysed --repeat times on one thread; medians per stage are printed with
        images/s. Without arguments the SampleImages of this checkout are used. Build with
        `swift build -c release` before believing a number.
        """,
        options: [
            .option("repeat", "N", "Timed analyses per photo.", default: "5"),
            .option("limit", "N", "At most this many photos.", default: "all"),
            .option("min-size", "PIXELS", "Smallest face searched.", default: "24"),
            .flag("json", "One JSON object."),
        ] + AnalysisOptions.all.filter { $0.name != "memory-limit" },
        positionals: (0, nil),
        examples: [("photodrain bench", "the sample photos"),
                   ("photodrain bench ~/Pictures/2024 --limit 20 --cascade /usr/share/opencv4/lbpcascades/lbpcascade_frontalface.xml", "another cascade")],
        exitCodes: [(0, "timed"), (1, "cascade or model unreadable"), (64, "usage error"), (65, "no photo could be timed")]
    )

    struct Report: Encodable {
        let cascade: String
        let model: String
        let analysisSize: Int
        let images: Int
        let samples: Int
        let medians: [String: Double]
        let medianTotal: Double
        let imagesPerSecond: Double
        let failures: [String]
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let pipeline = try AnalysisOptions.pipeline(arguments)
        let repeats = try arguments.int("repeat", default: 5, range: 1...1000)
        let limit = arguments.string("limit") == nil || arguments.string("limit") == "all" ? Int.max : try arguments.int("limit", default: 0, range: 1...Int.max)
        let files = Array(try photoFiles(arguments.positionals.isEmpty ? [try DemoCommand.sampleImagesFolder()] : arguments.positionals).prefix(limit))
        guard !files.isEmpty else { throw UsageError("no JPEG, PNG, HEIF or WebP photos found", command: spec.name) }
        var parameters = pipeline.settings.detection
        parameters.minSize = try arguments.int("min-size", default: 24, range: 0...100_000)
        let size = pipeline.settings.analysisSize
        let core = AnalysisBenchmark.run(files: files, cascade: pipeline.cascade,
                                         configuration: AnalysisBenchmark.Configuration(analysisShortSide: size, parameters: parameters, repetitions: repeats))
        // The classify stage: the linear model on the boxes the cascade found, timed apart.
        var classify: [Double] = []
        let clock = ContinuousClock()
        for path in files {
            guard let decoded = try? PhotoDecoder.decode(path, options: DecodeOptions(targetShortSide: size)) else { continue }
            let image = Resize.toAnalysisSize(decoded, shortSide: size)
            guard let boxes = try? pipeline.cascade.detect(in: image, parameters: parameters) else { continue }
            let regions = boxes.map { FaceRegion(x: $0.x, y: $0.y, width: $0.width, height: $0.height, neighbors: $0.neighbors) }
            for _ in 0..<repeats {
                let start = clock.now
                _ = try? pipeline.classifier.verdict(for: image, regions: regions, cascade: pipeline.cascade.identifier, milliseconds: 0)
                classify.append((clock.now - start).milliseconds)
            }
        }
        let m = core.medians
        let classifyMedian = AnalysisBenchmark.median(classify)
        let stages: [(String, Double)] = [("probe", m.probe), ("decode", m.decode), ("resize", m.resize), ("integral", m.integral),
                                          ("detect", m.detect), ("classify", classifyMedian)]
        let total = core.medianTotal + classifyMedian
        let report = Report(cascade: core.cascade, model: pipeline.classifier.model.identifier, analysisSize: size, images: core.images,
                            samples: core.samples, medians: Dictionary(uniqueKeysWithValues: stages.map { ($0.0, round3($0.1)) }),
                            medianTotal: round3(total), imagesPerSecond: total > 0 ? round3(1000 / total) : 0,
                            failures: core.failures.map { "\($0.path): \($0.reason)" })
        if arguments.flag("json") {
            Console.shared.json(report)
        } else {
            let console = Console.shared
            console.out("\(core.images) photos x \(repeats), cascade \(core.cascade), model \(report.model), analysis size \(size), one thread")
            console.out("stage      median ms")
            for (name, value) in stages { console.out("\(name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(String(format: "%9.2f", value))") }
            console.out("total      \(String(format: "%9.2f", total))   \(String(format: "%.1f", report.imagesPerSecond)) images/s")
            for failure in report.failures { console.err("skipped \(failure)") }
        }
        return core.images > 0 ? .success : .dataError
    }

    static func round3(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

    /// JPEG and PNG files named, or found (not recursively) in the folders named, sorted.
    static func photoFiles(_ paths: [String]) throws -> [String] {
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw UsageError("\(path) does not exist", command: spec.name)
            }
            if isDirectory.boolValue {
                files += try FileManager.default.contentsOfDirectory(atPath: path).sorted()
                    .filter { ImageFormat.fromExtension(of: $0) != nil && !$0.hasPrefix(".") }
                    .map { path + "/" + $0 }
            } else {
                files.append(path)
            }
        }
        return files
    }
}
