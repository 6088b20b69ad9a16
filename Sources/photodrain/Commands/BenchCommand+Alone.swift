import FaceAnalysis
import PhotoDecoding
import SystemSupport

/// The two parts of the analysis `bench` can time alone, for the scripts that set them beside a
/// peer on the same input: the network (`--network-only`, beside TF Lite in Scripts/bench-blazeface)
/// and a cascade's detection (`--detect-only`, beside OpenCV in Scripts/bench-vs-opencv). Both
/// measure the CPU time of the timing thread, not wall time.
extension BenchCommand {
    struct NetworkReport: Encodable {
        let model: String
        let precision: String
        let kernels: String
        let inputSize: Int
        let minMs: Double
        let medianMs: Double
    }

    /// One inference of BlazeFace's network on a fixed pseudo-random input, `repeats` times after
    /// a warm-up; `--profile` adds the time of each kind of step.
    static func benchNetwork(_ arguments: ParsedArguments, repeats: Int) throws -> ExitCode {
        let precision = try AnalysisOptions.precision(arguments)
        let path = try AnalysisOptions.weightsPath(arguments)
        let kernels = try chosenKernels(arguments)
        let side = try arguments.int("input-size", default: 192, range: 32...4096)
        let file = try NetworkFile.load(path)
        let calibration = precision == .int8 ? try NetworkCalibration.load(NetworkCalibration.path(forWeights: path), for: file) : nil
        let network = try ConvolutionalNetwork(file: file, inputSize: (side, side), precision: precision, calibration: calibration)
        let workspace = NetworkWorkspace(network: network, kernels: kernels)
        // A fixed input, the same every run and in every build.
        var state: UInt32 = 12345
        let input = workspace.input
        for i in 0..<input.count {
            state = state &* 1_664_525 &+ 1_013_904_223
            input[i] = Float(state >> 8) / Float(1 << 24) * 2 - 1
        }
        for _ in 0..<5 { workspace.run() }
        let times = ThreadCPUTime.samples(repeats) { workspace.run() }
        let report = NetworkReport(model: network.identifier, precision: network.precision.rawValue, kernels: workspace.kernels.rawValue,
                                   inputSize: side, minMs: round3(times[0]), medianMs: round3(times[times.count / 2]))
        let console = Console.shared
        if arguments.flag("json") {
            console.json(report)
        } else {
            console.out("network \(report.model), \(side)x\(side) input, \(report.precision), \(report.kernels) kernels, one thread")
            console.out("median \(String(format: "%.3f", report.medianMs)) ms, best \(String(format: "%.3f", report.minMs)) ms (\(repeats) runs)")
        }
        if arguments.flag("profile") {
            // Each kind of step, then each step shape, by total time over 20 runs; a shape that
            // occurs more than once is one line with its count.
            var totals: [String: UInt64] = [:]
            var occurrences: [String: Int] = [:]
            for (step, _) in workspace.profile() { occurrences[step, default: 0] += 1 }
            for _ in 0..<20 {
                for (step, nanoseconds) in workspace.profile() {
                    totals[String(step.split(separator: " ").first ?? ""), default: 0] += nanoseconds
                    totals[step, default: 0] += nanoseconds
                }
            }
            for (key, total) in totals.sorted(by: { $0.value > $1.value }) {
                let count = occurrences[key].map { $0 > 1 ? " x\($0)" : "" } ?? ""
                console.err("\(String(format: "%9.3f", Double(total) / 20 / 1e6)) ms  \(key)\(count)")
            }
        }
        return .success
    }

    /// `--kernels`, else the fastest this processor has; a usage error for a set it cannot run.
    static func chosenKernels(_ arguments: ParsedArguments) throws -> NetworkWorkspace.Kernels {
        guard let name = arguments.string("kernels") else { return .best }
        guard let chosen = NetworkWorkspace.Kernels(rawValue: name) else {
            throw UsageError("--kernels must be one of \(NetworkWorkspace.Kernels.allCases.map(\.rawValue).joined(separator: ", ")), not '\(name)'", command: spec.name)
        }
        guard chosen.isSupported else { throw UsageError("this processor cannot run the \(name) kernels", command: spec.name) }
        return chosen
    }

    struct DetectReport: Encodable {
        let file: String
        let cascade: String
        let faces: Int
        let minMs: Double
        let medianMs: Double
    }

    /// A cascade's detection alone on each file's gray pixels as they are (no scaling, no
    /// classifier), as OpenCV's `detectMultiScale` is timed on the same file.
    static func benchDetection(_ arguments: ParsedArguments, files: [String], repeats: Int) throws -> ExitCode {
        guard let path = arguments.string("cascade") else { throw UsageError("--detect-only needs --cascade XML", command: spec.name) }
        let cascade = try CascadeClassifier(contentsOf: path)
        var parameters = DetectionParameters(minSize: try arguments.int("min-size", default: 24, range: 0...100_000))
        parameters.scaleFactor = try arguments.double("scale-factor", default: 1.1, range: 1.001...4)
        parameters.minNeighbors = try arguments.int("min-neighbors", default: 3, range: 0...1000)
        var timed = 0
        for file in files {
            do {
                let image = try PhotoDecoder.decode(file, options: DecodeOptions(output: .gray))
                var faces = 0
                let times = try ThreadCPUTime.samples(repeats) { faces = try cascade.detect(in: image, parameters: parameters).count }
                let report = DetectReport(file: file, cascade: cascade.identifier, faces: faces,
                                          minMs: round3(times[0]), medianMs: round3(times[times.count / 2]))
                if arguments.flag("json") {
                    Console.shared.json(report)
                } else {
                    Console.shared.out("\(file): \(faces) faces, median \(String(format: "%.3f", report.medianMs)) ms, best \(String(format: "%.3f", report.minMs)) ms")
                }
                timed += 1
            } catch {
                Console.shared.err("skipped \(file): \(error)")
            }
        }
        return timed > 0 ? .success : .dataError
    }
}
