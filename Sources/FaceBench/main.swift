// FaceBench: a small release-built harness around FaceAnalysis for the scripts in Scripts/
// (parity fixtures, benchmark against OpenCV) until `photodrain detect` and `photodrain bench`
// take over. Every command prints JSON lines so the scripts can read them.
//
//   FaceBench gray INPUT OUTPUT.png
//   FaceBench detect --cascade XML [--scale-factor F] [--min-neighbors N] [--min-size S] [--max-size S] FILE...
//   FaceBench time --cascade XML [--repeat N] [detector options] FILE...
//   FaceBench bench --cascade XML [--analysis-size N] [--repeat N] [detector options] FILE...
//   FaceBench network-time [--precision int8|fp32] [--kernels portable|avx2|avx512] [--repeat N] [--size SIDE] [--profile [--all]] MODEL.pdnn
//   FaceBench calibrate --model PDNN --out JSON PHOTO...   (the int8 plan's activation ranges)
#if canImport(Glibc)
import Glibc
#endif
import FaceAnalysis
import PhotoDecoding

struct UsageError: Error { var message: String }

struct Options {
    var cascade: String?
    var parameters = DetectionParameters(minSize: 30)
    var repeats = 10
    var networkSize: Int?
    var analysisSize: Int? = 480
    var files: [String] = []
    var model: String?
    var minFace: Int?
    var minScore: Float?
    var rgb = false
    var precision = NetworkPrecision.fp32
    var kernels = NetworkWorkspace.Kernels.best
    var out: String?

    init(_ arguments: ArraySlice<String>) throws {
        var rest = arguments
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw UsageError(message: "\(flag) needs a value") }
            return v
        }
        func integer(_ flag: String) throws -> Int {
            guard let v = Int(try value(flag)) else { throw UsageError(message: "\(flag) needs an integer") }
            return v
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--cascade": cascade = try value(argument)
            case "--scale-factor":
                guard let v = Double(try value(argument)) else { throw UsageError(message: "--scale-factor needs a number") }
                parameters.scaleFactor = v
            case "--min-neighbors": parameters.minNeighbors = try integer(argument)
            case "--min-size": parameters.minSize = try integer(argument)
            case "--max-size": parameters.maxSize = try integer(argument)
            case "--repeat": repeats = max(1, try integer(argument))
            case "--size": networkSize = try integer(argument)
            case "--profile", "--all": break
            case "--model": model = try value(argument)
            case "--min-face": minFace = try integer(argument)
            case "--min-score":
                guard let v = Float(try value(argument)) else { throw UsageError(message: "--min-score needs a number") }
                minScore = v
            case "--rgb": rgb = true
            case "--precision":
                guard let p = NetworkPrecision(rawValue: try value(argument)) else { throw UsageError(message: "--precision int8|fp32") }
                precision = p
            case "--kernels":
                guard let k = NetworkWorkspace.Kernels(rawValue: try value(argument)) else { throw UsageError(message: "--kernels portable|avx2|avx512") }
                kernels = k
            case "--out": out = try value(argument)
            case "--analysis-size":
                let v = try integer(argument)
                analysisSize = v > 0 ? v : nil
            default:
                if argument.hasPrefix("--") { throw UsageError(message: "unknown option \(argument)") }
                files.append(argument)
            }
        }
    }

    func loadCascade() throws -> CascadeClassifier {
        guard let cascade else { throw UsageError(message: "--cascade is required") }
        return try CascadeClassifier(contentsOf: cascade)
    }
}

func json(_ value: String) -> String {
    var out = "\""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        default:
            if scalar.value < 0x20 { out += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4) } else { out.unicodeScalars.append(scalar) }
        }
    }
    return out + "\""
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

func format(_ value: Double) -> String {
    let scaled = (value * 1000).rounded() / 1000
    return "\(scaled)"
}

/// CPU time of the calling thread: unlike wall time it does not count the time the thread waits
/// for a core, which on a shared machine is most of the noise.
func threadMilliseconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) * 1000 + Double(spec.tv_nsec) / 1_000_000
}

func run(_ arguments: [String]) throws {
    guard let command = arguments.first else { throw UsageError(message: "no command") }
    let options = try Options(arguments.dropFirst())
    switch command {
    case "gray":
        guard options.files.count == 2 else { throw UsageError(message: "gray INPUT OUTPUT") }
        let image = try PhotoDecoder.decode(options.files[0], options: DecodeOptions(output: .gray))
        try ImageEncoder.writePNG(image, to: options.files[1])
    case "detect":
        let cascade = try options.loadCascade()
        for path in options.files {
            let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: .gray))
            let faces = try cascade.detect(in: image, parameters: options.parameters)
            let boxes = faces.map { "[\($0.x),\($0.y),\($0.width),\($0.height),\($0.neighbors)]" }.joined(separator: ",")
            print("{\"file\":\(json(path)),\"width\":\(image.width),\"height\":\(image.height),\"faces\":[\(boxes)]}")
        }
    case "time":
        // Detection only (thread CPU time), on the gray pixels of each file as they are, like
        // cv2 on the same PNG.
        let cascade = try options.loadCascade()
        for path in options.files {
            let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: .gray))
            var times: [Double] = []
            var faces = 0
            for _ in 0..<options.repeats {
                let start = threadMilliseconds()
                faces = try cascade.detect(in: image, parameters: options.parameters).count
                times.append(threadMilliseconds() - start)
            }
            times.sort()
            print("{\"file\":\(json(path)),\"cascade\":\(json(cascade.identifier)),\"faces\":\(faces),\"min_ms\":\(format(times[0])),\"median_ms\":\(format(times[times.count / 2]))}")
        }
    case "bench":
        let cascade = try options.loadCascade()
        let configuration = AnalysisBenchmark.Configuration(analysisShortSide: options.analysisSize,
                                                            parameters: options.parameters, repetitions: options.repeats)
        let result = AnalysisBenchmark.run(files: options.files, cascade: cascade, configuration: configuration)
        let stages = result.medians.stages.map { "\(json($0.name)):\(format($0.milliseconds))" }.joined(separator: ",")
        print("{\"cascade\":\(json(result.cascade)),\"images\":\(result.images),\"samples\":\(result.samples),\"median_ms\":{\(stages)},\"median_total_ms\":\(format(result.medianTotal)),\"images_per_second\":\(format(result.imagesPerSecond)),\"failures\":\(result.failures.count)}")
        for failure in result.failures { print("{\"failed\":\(json(failure.path)),\"reason\":\(json(failure.reason))}") }
    case "blazeface":
        // BlazeFace over each photo (decoded upright, gray or RGB): boxes in photo pixels + time.
        guard let model = options.model else { throw UsageError(message: "--model PDNN is required") }
        let detector = try BlazeFace(contentsOf: model, precision: options.precision)
        var blazeOptions = BlazeFaceOptions()
        if let minFace = options.minFace { blazeOptions.minFaceSize = minFace }
        if let minScore = options.minScore { blazeOptions.minScore = minScore }
        for path in options.files {
            let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: options.rgb ? .rgb : .gray))
            var times: [Double] = []
            var found: [BlazeFaceDetection] = []
            for _ in 0..<max(1, options.repeats) {
                let start = threadMilliseconds()
                found = try detector.detect(in: image, options: blazeOptions)
                times.append(threadMilliseconds() - start)
            }
            times.sort()
            let boxes = found.map { d in
                let b = d.faceBox
                return "[\(format(Double(b.x))),\(format(Double(b.y))),\(format(Double(b.width))),\(format(Double(b.height))),\(format(Double(d.face.score))),\(d.support),\(d.levels),\(format(Double(d.networkSize)))]"
            }.joined(separator: ",")
            print("{\"file\":\(json(path)),\"width\":\(image.width),\"height\":\(image.height),\"median_ms\":\(format(times[times.count / 2])),\"faces\":[\(boxes)]}")
        }
    case "network-time":
        // One BlazeFace inference on a fixed pseudo-random 192x192 input (thread CPU time).
        guard let path = options.files.first else { throw UsageError(message: "network-time [--repeat N] [--size SIDE] [--profile [--all]] MODEL.pdnn") }
        let file = try NetworkFile.load(path)
        let calibration = options.precision == .int8
            ? try NetworkCalibration.load(NetworkCalibration.path(forWeights: path), for: file) : nil
        let network = try ConvolutionalNetwork(file: file, inputSize: options.networkSize.map { ($0, $0) },
                                               precision: options.precision, calibration: calibration)
        let workspace = NetworkWorkspace(network: network, kernels: options.kernels)
        var state: UInt32 = 12345
        let input = workspace.input
        for i in 0..<input.count {
            state = state &* 1_664_525 &+ 1_013_904_223
            input[i] = Float(state >> 8) / Float(1 << 24) * 2 - 1
        }
        for _ in 0..<5 { workspace.run() }
        var times: [Double] = []
        for _ in 0..<options.repeats {
            let start = threadMilliseconds()
            workspace.run()
            times.append(threadMilliseconds() - start)
        }
        times.sort()
        if CommandLine.arguments.contains("--profile") {
            var totals: [String: UInt64] = [:]
            var order: [String] = []
            var count: [String: Int] = [:]
            for (step, _) in workspace.profile() { count[step, default: 0] += 1 }
            for _ in 0..<20 {
                for (step, ns) in workspace.profile() {
                    let kind = String(step.split(separator: " ").first ?? "")
                    if totals[kind] == nil { order.append(kind) }
                    totals[kind, default: 0] += ns
                    if totals[step] == nil { order.append(step) }
                    totals[step, default: 0] += ns
                }
            }
            for key in order.sorted(by: { totals[$0]! > totals[$1]! }).prefix(CommandLine.arguments.contains("--all") ? 1000 : 25) {
                // A step shape that occurs more than once is one line, its total time and "xN".
                print(key, format(Double(totals[key]!) / 20 / 1e6) + (count[key].map { $0 > 1 ? " x\($0)" : "" } ?? ""))
            }
        }
        print("{\"model\":\(json(network.identifier)),\"precision\":\(json(network.precision.rawValue)),\"kernels\":\(json(workspace.kernels.rawValue)),\"min_ms\":\(format(times[0])),\"median_ms\":\(format(times[times.count / 2]))}")
    case "calibrate":
        // The Float network's activation ranges over real photos, as analysis runs it (faces down
        // to a 40th of the short side, 8 to 40 px, at most 1600 px on the short side).
        guard let model = options.model, let out = options.out, !options.files.isEmpty else {
            throw UsageError(message: "calibrate --model PDNN --out JSON PHOTO...")
        }
        let detector = try BlazeFace(contentsOf: model, precision: .fp32)
        var ranges: [Int: (Float, Float)] = [:]
        var names: [String] = []
        for path in options.files {
            let header = try PhotoDecoder.probe(path)
            let short = min(header.uprightSize.width, header.uprightSize.height)
            let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb, targetShortSide: min(short, 1600)))
            let minFace = max(8, min(40, min(image.width, image.height) / 40))
            try detector.calibrate(on: [(image, minFace)], ranges: &ranges)
            names.append(String(path.split(separator: "/").last ?? ""))
        }
        let calibration = NetworkCalibration(network: detector.identifier,
                                             calibratedOn: "\(names.count) photos: " + names.joined(separator: ", "), ranges: ranges)
        try calibration.write(to: out)
        print("{\"calibrated\":\(json(out)),\"ops\":\(ranges.count),\"photos\":\(names.count)}")
    default:
        throw UsageError(message: "unknown command \(command)")
    }
}

/// Writes `text` to standard error (file descriptor 2).
func printError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch let error as UsageError {
    printError("FaceBench: \(error.message)\nusage: FaceBench gray|detect|time|bench [options] FILE...\n")
    exit(64)
} catch {
    printError("FaceBench: \(error)\n")
    exit(65)
}
