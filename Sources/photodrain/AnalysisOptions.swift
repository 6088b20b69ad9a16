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
}
