import Drain
import FaceAnalysis
import Foundation

/// The options every command that analyses shares: size, cascade, model, memory limit.
enum AnalysisOptions {
    static let all: [OptionSpec] = [
        .option("analysis-size", "PIXELS", "Short side photos are analysed at.", default: "\(Defaults.analysisSize)"),
        .option("cascade", "PATH", "OpenCV cascade XML for the face regions.", default: AnalysisSettings.defaultCascade),
        .option("model", "PATH", "Face-confirmation model (photodrain train writes one).", default: "Models/face-confirm.json of this build"),
        .option("memory-limit", "BYTES", "Stay under this much memory (512M, 2G); the cgroup limit also applies."),
    ]

    /// The analysis pipeline the options describe. Usage errors for bad values; the pipeline's own
    /// errors (cascade or model unreadable) propagate.
    static func pipeline(_ arguments: ParsedArguments) throws -> FacePipeline {
        guard let model = arguments.string("model") ?? AnalysisSettings.locateDefaultModel() else {
            throw UsageError("no face-confirmation model found beside this binary; pass --model PATH", command: arguments.command)
        }
        var settings = AnalysisSettings(modelPath: model)
        settings.analysisSize = try arguments.int("analysis-size", default: Defaults.analysisSize, range: 24...100_000)
        if let cascade = arguments.string("cascade") { settings.cascadePath = cascade }
        return try FacePipeline(settings: settings)
    }

    static func memoryGuard(_ arguments: ParsedArguments) throws(UsageError) -> MemoryGuard {
        MemoryGuard(configuredLimit: try arguments.bytes("memory-limit"))
    }

    /// Why analysis can never make progress here, or nil. When photos wait, none was analysed,
    /// and the limit leaves no headroom at all above the process's own footprint (e.g.
    /// `--memory-limit` below it), rerunning cannot help: `wake` exits 1 then, and so do
    /// `analyze` and `drain`, rather than 75 ("run again") forever.
    static func noProgressPossible(_ memory: MemoryGuard, analysed: Int, remaining: Int) -> String? {
        guard analysed == 0, remaining > 0 else { return nil }
        let reading = memory.read()
        guard reading.headroom == 0 else { return nil }
        return "no progress possible: the memory limit (\(reading.limit >> 20) MiB, from \(reading.source)) leaves no headroom above this process's own footprint (\(reading.used >> 20) MiB) to analyse a photo"
    }
}
