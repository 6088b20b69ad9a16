import Foundation

/// The JSON form of a `LinearModel` on disk (format version 1). Keys are written sorted and
/// pretty-printed, so the same model always gives the same bytes and a retrained model diffs well.
///
/// ```
/// { "bias": …, "featureSpec": {…}, "format": "photodrain-linear-model", "formatVersion": 1,
///   "means": […], "name": "face-confirm", "scales": […], "threshold": 0.5,
///   "training": {…}, "weights": […] }
/// ```
/// `weights` apply to standardised features: score = bias + Σ weights[i]·(x[i] − means[i]) / scales[i].
struct ModelFile: Codable, Equatable {
    /// The value of `format` in every model file.
    static let formatName = "photodrain-linear-model"
    /// The format version this build writes and reads.
    static let currentVersion = 1

    var format: String
    var formatVersion: Int
    var name: String
    var featureSpec: Features.Spec
    var means: [Float]
    var scales: [Float]
    var weights: [Float]
    var bias: Float
    var threshold: Float
    var training: TrainingMetadata?
    /// Held-out figures of a model trained on labelled photos; absent otherwise.
    var evaluation: PhotoEvaluation?

    /// The file's bytes.
    func encoded() throws(FaceAnalysisError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        do {
            var data = try encoder.encode(self)
            data.append(0x0A)
            return data
        } catch {
            throw FaceAnalysisError(.malformedModel, "the model cannot be encoded as JSON", cause: "\(error)")
        }
    }

    /// Parses a file's bytes, checking the format name and version before anything else.
    static func decode(_ data: Data, path: String?) throws(FaceAnalysisError) -> ModelFile {
        struct Header: Decodable {
            var format: String?
            var formatVersion: Int?
        }
        let decoder = JSONDecoder()
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: data)
        } catch {
            throw FaceAnalysisError(.malformedModel, "the model file is not JSON", path: path, cause: "\(error)")
        }
        guard header.format == formatName else {
            throw FaceAnalysisError(.malformedModel,
                                  "not a PhotoDrain model file (format is \(header.format.map { "\"\($0)\"" } ?? "missing"), expected \"\(formatName)\")",
                                  path: path)
        }
        guard header.formatVersion == currentVersion else {
            throw FaceAnalysisError(.unsupportedModelVersion,
                                  "model format version \(header.formatVersion.map(String.init) ?? "missing") is not readable by this build (it reads \(currentVersion))",
                                  path: path)
        }
        do {
            return try decoder.decode(ModelFile.self, from: data)
        } catch {
            throw FaceAnalysisError(.malformedModel, "the model file does not match the model format", path: path,
                                  cause: "\(error)")
        }
    }
}
