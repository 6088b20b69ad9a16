import Drain
import FaceAnalysis
import SystemSupport

/// `bench --embedding`: the face descriptor alone, one 150x150 chip per run, on the timing
/// thread's CPU time (issue 36's bar: at most 5 ms per face on one thread; dlib itself takes 55).
extension BenchCommand {
    struct EmbeddingReport: Encodable {
        let model: String
        let kernels: String
        let precision: String
        let minMs: Double
        let medianMs: Double
    }

    static func benchEmbedding(_ arguments: ParsedArguments, repeats: Int) throws -> ExitCode {
        let kernels = try chosenKernels(arguments)
        let file = FaceDescriptorNetwork.fileName
        guard let path = ModelSearch.current.locate(file) else {
            throw UsageError("\(ModelSearch.current.describeSearch(for: file)) (Scripts/fetch-face-embedding-model writes it)", command: spec.name)
        }
        let precision: FaceDescriptorNetwork.Precision
        if let name = arguments.string("embedding-precision") {
            guard let chosen = FaceDescriptorNetwork.Precision(rawValue: name) else {
                throw UsageError("--embedding-precision must be int16 or fp32, not '\(name)'", command: spec.name)
            }
            precision = chosen
        } else {
            precision = FaceDescriptorNetwork.preferredPrecision(for: kernels)
        }
        let network = try FaceDescriptorNetwork(contentsOf: path, precision: precision)
        let workspace = FaceDescriptorWorkspace(network: network, kernels: kernels)
        // A fixed chip, the same every run and in every build: the cost does not depend on the face.
        var state: UInt32 = 12345
        let side = FaceDescriptorNetwork.chipSize
        let chip = try FaceChip(rgb: (0..<(side * side * 3)).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        })
        for _ in 0..<3 { _ = network.embedding(chip: chip, in: workspace) }
        let times = ThreadCPUTime.samples(repeats) { _ = network.embedding(chip: chip, in: workspace) }
        let report = EmbeddingReport(model: network.identifier, kernels: workspace.kernels.rawValue, precision: network.precision.rawValue,
                                     minMs: round3(times[0]), medianMs: round3(times[times.count / 2]))
        if arguments.flag("json") {
            Console.shared.json(report)
        } else {
            Console.shared.out("face descriptor \(report.model), 150x150 chip, \(report.precision), \(report.kernels) kernels, one thread")
            Console.shared.out("median \(String(format: "%.3f", report.medianMs)) ms per face, best \(String(format: "%.3f", report.minMs)) ms (\(repeats) runs)")
        }
        return .success
    }
}
