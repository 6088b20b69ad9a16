import Drain
import FaceAnalysis
import Foundation
import PhotoAnalysis
import PhotoDecoding
import SystemSupport

/// `photodrain bench [DIR|FILE...]`: times the analysis core stage by stage.
enum BenchCommand: Command {
    static let spec = CommandSpec(
        name: "bench",
        abstract: "Time the analysis core stage by stage: probe, decode, pyramid, network, merge, second look, classify (BlazeFace) or probe, decode, resize, integral, detect, classify (cascade).",
        arguments: "[DIR|FILE...]",
        discussion: """
        Each photo is analysed --repeat times on one thread; medians per stage are printed with
        images/s. Without arguments the SampleImages of this checkout are used. Build with
        `swift build -c release` before believing a number. For BlazeFace, `network` includes
        filling each tile's input and decoding its outputs; the kernels line says which compiled
        kernels ran (AVX-512 + VNNI or AVX2 + FMA where the processor has them) and at which
        precision. Without --precision (and without --json), BlazeFace is timed at int8 and then
        at fp32, each with its own verdict model.

        Two parts can be timed alone, for the scripts that set them beside a peer on the same
        input (thread CPU time, so a busy machine's waiting does not count): --network times one
        inference of BlazeFace's network on a fixed input of --input-size (no photo; beside TF
        Lite in Scripts/bench-blazeface), and --detect-only with --cascade times the cascade's
        detection on each file's gray pixels as they are, unscaled and without the classifier
        (beside OpenCV's detectMultiScale in Scripts/bench-vs-opencv). --embedding times the face
        descriptor (dlib's ResNet, Models/face-embedding.pdnn) on one fixed 150x150 chip: the cost
        of each confirmed face.
        """,
        options: [
            .option("repeat", "N", "Timed analyses per photo.", default: "5"),
            .option("limit", "N", "At most this many photos.", default: "all"),
            .option("min-size", "PIXELS", "Cascade: smallest face searched.", default: "24"),
            .flag("json", "One JSON object (with --detect-only, one per file)."),
            .flag("network-only", "Time BlazeFace's network alone, one inference on a fixed input."),
            .option("input-size", "PIXELS", "With --network-only: the input's side.", default: "192"),
            .flag("embedding", "Time the face descriptor alone, one 150x150 chip per run."),
            .option("kernels", "portable|avx2|avx512", "With --network-only or --embedding: which compiled kernels run.", default: "the fastest this processor has"),
            .option("embedding-precision", "int16|fp32", "With --embedding: the descriptor's arithmetic.", default: "int16 (fp32 with the portable kernels, as a processor without AVX2 runs it)"),
            .flag("profile", "With --network-only: the time of each kind of step, on stderr."),
            .flag("detect-only", "Time a cascade's detection alone on each file's gray pixels, unscaled (needs --cascade)."),
            .option("scale-factor", "F", "With --detect-only: the cascade's scale step.", default: "1.1"),
            .option("min-neighbors", "N", "With --detect-only: overlapping boxes a face needs.", default: "3"),
        ] + AnalysisOptions.all.filter { $0.name != "memory-limit" },
        positionals: (0, nil),
        examples: [("photodrain bench", "the sample photos"),
                   ("photodrain bench --network-only --input-size 448 --precision int8 --json", "the network alone"),
                   ("photodrain bench --embedding --repeat 50", "the face descriptor, ms per face"),
                   ("photodrain bench ~/Pictures/2024 --limit 20 --cascade /usr/share/opencv4/lbpcascades/lbpcascade_frontalface.xml", "another cascade")],
        exitCodes: [(0, "timed"), (1, "weights, cascade or model unreadable"), (64, "usage error"), (65, "no photo could be timed")]
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
        let repeats = try arguments.int("repeat", default: 5, range: 1...1000)
        if arguments.flag("network-only") {
            guard arguments.positionals.isEmpty else { throw UsageError("--network-only times the network on a fixed input: give no photos", command: spec.name) }
            return try benchNetwork(arguments, repeats: repeats)
        }
        if arguments.flag("embedding") {
            guard arguments.positionals.isEmpty else { throw UsageError("--embedding times the descriptor on a fixed chip: give no photos", command: spec.name) }
            return try benchEmbedding(arguments, repeats: repeats)
        }
        let limit = arguments.string("limit") == nil || arguments.string("limit") == "all" ? Int.max : try arguments.int("limit", default: 0, range: 1...Int.max)
        let files = Array(try photoFiles(arguments.positionals.isEmpty ? [try DemoCommand.sampleImagesFolder()] : arguments.positionals).prefix(limit))
        guard !files.isEmpty else { throw UsageError("no JPEG, PNG, HEIF or WebP photos found", command: spec.name) }
        if arguments.flag("detect-only") { return try benchDetection(arguments, files: files, repeats: repeats) }
        let pipeline = try AnalysisOptions.pipeline(arguments)
        if case .blazeFace = pipeline.detector {
            let json = arguments.flag("json")
            let first = benchBlazeFace(pipeline, files: files, repeats: repeats, json: json)
            guard arguments.string("precision") == nil, !json, first == .success else { return first }
            Console.shared.out("")
            return benchBlazeFace(try AnalysisOptions.pipeline(arguments, precision: .fp32), files: files, repeats: repeats, json: json)
        }
        var parameters = pipeline.settings.detection
        parameters.minSize = try arguments.int("min-size", default: 24, range: 0...100_000)
        let size = pipeline.settings.analysisSize
        guard case let .cascade(cascade, _) = pipeline.detector else { return .failure }
        let core = AnalysisBenchmark.run(files: files, cascade: cascade,
                                         configuration: AnalysisBenchmark.Configuration(analysisShortSide: size, parameters: parameters, repetitions: repeats))
        // The classify stage: the linear model on the boxes the cascade found, timed apart.
        var classify: [Double] = []
        let clock = ContinuousClock()
        for path in files {
            guard let decoded = try? PhotoDecoder.decode(path, options: DecodeOptions(targetShortSide: size)) else { continue }
            let image = Resize.toAnalysisSize(decoded, shortSide: size)
            guard let boxes = try? cascade.detect(in: image, parameters: parameters) else { continue }
            let regions = boxes.map { FaceRegion(x: $0.x, y: $0.y, width: $0.width, height: $0.height, neighbors: $0.neighbors) }
            for _ in 0..<repeats {
                let start = clock.now
                _ = try? pipeline.classifier.verdict(for: image, regions: regions, cascade: cascade.identifier, milliseconds: 0)
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

    struct BlazeFaceReport: Encodable {
        let detector: String
        let precision: String
        let kernels: String
        let model: String
        let images: Int
        let samples: Int
        let medians: [String: Double]
        let medianTotal: Double
        let imagesPerSecond: Double
        let tilesPerImage: Double
        let networkMegapixelsPerImage: Double
        let failures: [String]
    }

    /// Stage medians of the BlazeFace pipeline, as `analyze` runs it, one photo at a time.
    static func benchBlazeFace(_ pipeline: FacePipeline, files: [String], repeats: Int, json: Bool) -> ExitCode {
        guard case let .blazeFace(network, options, minFace) = pipeline.detector else { return .failure }
        let names = ["probe", "decode", "pyramid", "network", "merge", "second-look", "classify"]
        var samples: [[Double]] = Array(repeating: [], count: names.count)
        var totals: [Double] = []
        var tiles = 0, tilePixels = 0, runs = 0
        var failures: [String] = []
        var images = 0
        for path in files {
            var failed = false
            for _ in 0..<repeats {
                do {
                    var t = [Double](repeating: 0, count: names.count)
                    var start = ContinuousClock.now
                    func lap() -> Double {
                        let now = ContinuousClock.now
                        defer { start = now }
                        return (now - start).milliseconds
                    }
                    let header = try PhotoDecoder.probe(path, maxPixels: pipeline.settings.maxPixels)
                    t[0] = lap()
                    let target = pipeline.detector.decodeShortSide(for: header, cascadeShortSide: pipeline.settings.analysisSize)
                    let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb, targetShortSide: target,
                                                                                     maxPixels: pipeline.settings.maxPixels))
                    t[1] = lap()
                    let photoScale = Double(image.width) / Double(max(1, header.uprightSize.width))
                    var scaled = options
                    let short = min(header.uprightSize.width, header.uprightSize.height)
                    let wanted = minFace ?? FaceDetector.automaticMinFaceSize(shortSide: short)
                    scaled.minFaceSize = max(1, Int((Double(wanted) * photoScale).rounded()))
                    var timings = BlazeFaceTimings()
                    let found = try network.detect(in: image, options: scaled, timings: &timings)
                    _ = lap()
                    let regions = try network.regions(for: found, in: image, options: scaled)
                    t[5] = lap()
                    _ = try pipeline.classifier.faces(in: image, regions: regions)
                    t[6] = lap()
                    t[2] = Double(timings.pyramid) / 1e6
                    t[3] = Double(timings.network) / 1e6
                    t[4] = Double(timings.merge) / 1e6
                    for i in t.indices { samples[i].append(t[i]) }
                    totals.append(t.reduce(0, +))
                    tiles += timings.tiles
                    tilePixels += timings.tilePixels
                    runs += 1
                } catch {
                    failures.append("\(path): \(error)")
                    failed = true
                    break
                }
            }
            if !failed { images += 1 }
        }
        let medians = samples.map(AnalysisBenchmark.median)
        let total = medians.reduce(0, +)
        let kernels = NetworkWorkspace.Kernels.best.rawValue
        let report = BlazeFaceReport(detector: network.identifier, precision: network.precision.rawValue, kernels: kernels, model: pipeline.classifier.model.identifier,
                                     images: images, samples: runs,
                                     medians: Dictionary(uniqueKeysWithValues: zip(names, medians.map(round3))),
                                     medianTotal: round3(total), imagesPerSecond: total > 0 ? round3(1000 / total) : 0,
                                     tilesPerImage: round3(Double(tiles) / Double(max(runs, 1))),
                                     networkMegapixelsPerImage: round3(Double(tilePixels) / Double(max(runs, 1)) / 1e6),
                                     failures: failures)
        let console = Console.shared
        if json {
            console.json(report)
        } else {
            console.out("\(images) photos x \(repeats), detector \(network.identifier) (\(network.precision), \(kernels) kernels), model \(report.model), one thread")
            console.out("min face   \(minFace.map { "\($0) px" } ?? "automatic (a 40th of the short side, 8 to 40 px)"); \(String(format: "%.1f", report.tilesPerImage)) network inputs, \(String(format: "%.2f", report.networkMegapixelsPerImage)) MP per photo")
            console.out("stage        median ms")
            for (name, value) in zip(names, medians) { console.out("\(name.padding(toLength: 12, withPad: " ", startingAt: 0)) \(String(format: "%9.2f", value))") }
            console.out("total        \(String(format: "%9.2f", total))   \(String(format: "%.1f", report.imagesPerSecond)) images/s")
            for failure in failures { console.err("skipped \(failure)") }
        }
        return images > 0 ? .success : .dataError
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
