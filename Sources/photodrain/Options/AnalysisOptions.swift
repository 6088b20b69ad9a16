import Drain
import FaceAnalysis
import Foundation
import PhotoAnalysis

/// The options every command that analyses shares: detector, its files, model, memory limit.
enum AnalysisOptions {
    static let all: [OptionSpec] = [
        .option("detector", "blazeface|cascade", "Which detector proposes faces: BlazeFace (a CNN over an image pyramid) or an OpenCV cascade (--cascade).", default: "blazeface"),
        .option("min-face", "PIXELS", "Smallest face BlazeFace looks for, in photo pixels (each halving quadruples the work).", default: "a 40th of the photo's short side, 8 to 40"),
        .option("weights", "PATH", "BlazeFace's weights.", default: "Models/\(AnalysisSettings.networkFile) of this build"),
        .option("precision", "int8|fp32", "BlazeFace's arithmetic: int8 (faster; needs the calibration beside the weights) or fp32. The verdict model must have been fitted at the same precision.", default: "int8 (fp32 on a processor without AVX2)"),
        .option("cascade", "PATH", "OpenCV cascade XML; implies --detector cascade.", default: AnalysisSettings.defaultCascade),
        .option("analysis-size", "PIXELS", "Short side photos are analysed at by a cascade.", default: "\(Defaults.analysisSize)"),
        .option("model", "PATH", "The classifier that decides each box (photodrain train writes one).",
                default: "Models/\(AnalysisSettings.verdictModelFile) (BlazeFace) or Models/\(AnalysisSettings.cascadeModelFile) (cascade) of this build"),
        .option("people", "on|off", "Give each confirmed face a descriptor (dlib's face descriptor, Models/\(FaceDescriptorNetwork.fileName)) for 'photodrain people'; BlazeFace only (a cascade's boxes have no keypoints to align by).", default: "on"),
        .option("memory-limit", "BYTES", "Stay under this much memory (512M, 2G); the cgroup limit also applies. A photo whose analysis does not fit is left for a later run, never analysed at a smaller scale (its verdict would find fewer faces)."),
    ]

    /// The detector the options choose: `--detector`, or `cascade` when only `--cascade` is given.
    static func detectorKind(_ arguments: ParsedArguments) throws(UsageError) -> DetectorKind {
        guard let name = arguments.string("detector") else {
            return arguments.string("cascade") != nil ? .cascade : .blazeface
        }
        guard let kind = DetectorKind(rawValue: name) else {
            throw UsageError("--detector must be blazeface or cascade, not '\(name)'", command: arguments.command)
        }
        if kind == .blazeface && arguments.string("cascade") != nil {
            throw UsageError("--cascade needs --detector cascade (BlazeFace does not read cascades)", command: arguments.command)
        }
        return kind
    }

    /// The verdict model fitted on fp32 scores, the default with `--precision fp32`.
    static let fp32VerdictModelFile = "face-verdict-fp32.json"

    /// `--precision` (`override` when given), else `BlazeFace.preferredPrecision`: what the
    /// detector runs at and the verdict model is checked against.
    static func precision(_ arguments: ParsedArguments, override: NetworkPrecision? = nil) throws(UsageError) -> NetworkPrecision {
        if let override { return override }
        guard let name = arguments.string("precision") else { return BlazeFace.preferredPrecision }
        guard let precision = NetworkPrecision(rawValue: name) else {
            throw UsageError("--precision must be int8 or fp32, not '\(name)'", command: arguments.command)
        }
        return precision
    }

    /// The analysis settings the options describe. Usage errors for bad values or missing files.
    /// `precision` overrides `--precision` (for `bench`, which times both).
    static func settings(_ arguments: ParsedArguments, precision override: NetworkPrecision? = nil) throws -> AnalysisSettings {
        let kind = try detectorKind(arguments)
        let precision = try precision(arguments, override: override)
        let modelFile = kind == .blazeface ? (precision == .fp32 ? fp32VerdictModelFile : AnalysisSettings.verdictModelFile)
            : AnalysisSettings.cascadeModelFile
        guard let model = arguments.string("model") ?? ModelSearch.current.locate(modelFile) else {
            throw UsageError("\(ModelSearch.current.describeSearch(for: modelFile)); pass --model PATH", command: arguments.command)
        }
        var settings = AnalysisSettings(modelPath: model)
        settings.detector = kind
        settings.precision = precision
        if kind == .blazeface {
            settings.networkPath = try weightsPath(arguments)
            if arguments.string("min-face") != nil {
                settings.minFaceSize = try arguments.int("min-face", default: 40, range: 4...100_000)
            }
        }
        settings.analysisSize = try arguments.int("analysis-size", default: Defaults.analysisSize, range: 24...100_000)
        if kind == .blazeface, try people(arguments) {
            guard let path = ModelSearch.current.locate(FaceDescriptorNetwork.fileName) else {
                throw UsageError("\(ModelSearch.current.describeSearch(for: FaceDescriptorNetwork.fileName)); run Scripts/fetch-face-embedding-model, or pass --people off",
                                 command: arguments.command)
            }
            settings.embeddingPath = path
        }
        if let cascade = arguments.string("cascade") { settings.cascadePath = cascade }
        return settings
    }

    /// `--people`: whether confirmed faces get descriptors (on unless told off).
    static func people(_ arguments: ParsedArguments) throws(UsageError) -> Bool {
        switch arguments.string("people") ?? "on" {
        case "on": return true
        case "off": return false
        case let other: throw UsageError("--people wants on or off, not '\(other)'", command: arguments.command)
        }
    }

    /// The analysis pipeline the options describe. Usage errors for bad values; the pipeline's own
    /// errors (weights, cascade or model unreadable) propagate.
    static func pipeline(_ arguments: ParsedArguments, precision: NetworkPrecision? = nil) throws -> FacePipeline {
        try FacePipeline(settings: try settings(arguments, precision: precision))
    }

    /// BlazeFace at `precision` with the weights the options name (for `train --labelled`).
    static func blazeFace(_ arguments: ParsedArguments, precision: NetworkPrecision) throws -> FaceDetector {
        .blazeFace(try BlazeFace(contentsOf: try weightsPath(arguments), precision: precision), BlazeFaceOptions(), minFaceSize: nil)
    }

    /// BlazeFace's weights: `--weights`, else the shipped file where `ModelSearch` finds it. A
    /// usage error names the places looked in.
    static func weightsPath(_ arguments: ParsedArguments) throws(UsageError) -> String {
        guard let path = arguments.string("weights") ?? ModelSearch.current.locate(AnalysisSettings.networkFile) else {
            throw UsageError("\(ModelSearch.current.describeSearch(for: AnalysisSettings.networkFile)); pass --weights PATH (Scripts/convert-blazeface writes it)",
                             command: arguments.command)
        }
        return path
    }

    static func memoryGuard(_ arguments: ParsedArguments) throws(UsageError) -> MemoryGuard {
        MemoryGuard(configuredLimit: try arguments.bytes("memory-limit"))
    }

    /// Why analysis can never make progress here, or nil. When photos wait, none was analysed,
    /// and the limit leaves less headroom above the process's own footprint than the runner
    /// starts a photo with (`leastHeadroom`; none at all for `drain`, e.g. `--memory-limit` below
    /// the footprint), or every photo left was tried and needs more than the headroom of this
    /// process at rest (`deferrals`: photos are never analysed at a smaller scale to fit),
    /// rerunning cannot help: `wake` exits 1 then, and so do `analyze` and `drain`, rather than
    /// 75 ("run again") forever.
    static func noProgressPossible(_ memory: MemoryGuard, analysed: Int, remaining: Int, leastHeadroom: Int = 1,
                                   deferrals: MemoryDeferrals = MemoryDeferrals()) -> String? {
        guard analysed == 0, remaining > 0 else { return nil }
        let reading = memory.read()
        let limit = "the memory limit (\(reading.limit >> 20) MiB, from \(reading.source))"
        if reading.headroom == 0 {
            return "no progress possible: \(limit) leaves no headroom above this process's own footprint (\(reading.used >> 20) MiB) to analyse a photo"
        }
        if reading.headroom < leastHeadroom {
            return "no progress possible: \(limit) leaves \(reading.headroom >> 20) MiB of headroom above this process's own footprint (\(reading.used >> 20) MiB) and its reserve (\(memory.reserve >> 20) MiB), less than the \(AnalysisCost.mebibytes(leastHeadroom)) MiB a photo is started with. Raise the limit"
        }
        if deferrals.count >= remaining, let need = deferrals.smallestNeed, need > reading.headroom {
            let photos = remaining == 1 ? "the photo left needs" : "the least of the \(remaining) photos left needs"
            return "no progress possible: \(limit) leaves \(reading.headroom >> 20) MiB of headroom above this process's own footprint (\(reading.used >> 20) MiB) and its reserve (\(memory.reserve >> 20) MiB); \(photos) about \(AnalysisCost.mebibytes(need)) MiB at its analysis scale, and no photo is analysed smaller to fit. Raise the limit"
        }
        return nil
    }
}
