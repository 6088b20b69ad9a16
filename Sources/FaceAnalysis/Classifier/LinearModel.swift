import Foundation

/// A trained logistic-regression face confirmer: standardisation, weights, bias and threshold for
/// one feature spec. Loaded from and written to JSON model files (`ModelFile` describes the format).
///
/// Scoring folds the standardisation into the weights once, so each box costs one SIMD dot product.
public struct LinearModel: Sendable, Equatable {
    /// A short name, e.g. `face-confirm`.
    public let name: String
    /// The feature layout the model reads.
    public let spec: Features.Spec
    /// Per-feature means subtracted before weighting.
    public let means: [Float]
    /// Per-feature scales divided by before weighting.
    public let scales: [Float]
    /// Weights on standardised features.
    public let weights: [Float]
    /// The intercept.
    public let bias: Float
    /// Probability at or above which a box counts as a face.
    public let threshold: Float
    /// How the model was trained; nil for a hand-made model.
    public let training: TrainingMetadata?
    /// For a model trained on labelled photos (`PhotoTrainer`): its held-out figures.
    public let evaluation: PhotoEvaluation?

    private let foldedWeights: [Float]
    private let foldedBias: Float

    /// A model from its parts. Throws `featureSpecMismatch` for a spec this build does not compute
    /// and `malformedModel` when the arrays do not all have the spec's dimension, a value is not
    /// finite, a scale is not positive or the threshold is outside 0...1.
    public init(name: String, spec: Features.Spec, means: [Float], scales: [Float], weights: [Float],
                bias: Float, threshold: Float = 0.5, training: TrainingMetadata? = nil,
                evaluation: PhotoEvaluation? = nil) throws(FaceAnalysisError) {
        try spec.validate()
        let dimension = spec.dimension
        guard means.count == dimension, scales.count == dimension, weights.count == dimension else {
            throw FaceAnalysisError(.malformedModel,
                                  "the spec has \(dimension) features but the model has \(means.count) means, \(scales.count) scales and \(weights.count) weights")
        }
        guard (means + weights + [bias, threshold]).allSatisfy(\.isFinite),
              scales.allSatisfy({ $0.isFinite && $0 > 0 }), (0...1).contains(threshold) else {
            throw FaceAnalysisError(.malformedModel,
                                  "model values must be finite, scales positive and the threshold within 0...1")
        }
        self.name = name
        self.spec = spec
        self.means = means
        self.scales = scales
        self.weights = weights
        self.bias = bias
        self.threshold = threshold
        self.training = training
        self.evaluation = evaluation
        var folded = [Float](repeating: 0, count: dimension)
        var offset: Float = 0
        for index in 0..<dimension {
            folded[index] = weights[index] / scales[index]
            offset += folded[index] * means[index]
        }
        self.foldedWeights = folded
        self.foldedBias = bias - offset
    }

    /// `name@` and 8 hex digits of an FNV-1a hash of the spec, standardisation, weights, bias and
    /// threshold: names the exact weights a verdict came from.
    public var identifier: String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        func mix(_ value: UInt32) {
            for shift in stride(from: 0, to: 32, by: 8) {
                hash ^= UInt64((value >> UInt32(shift)) & 0xFF)
                hash &*= 0x0000_0100_0000_01B3
            }
        }
        for byte in spec.description.utf8 { mix(UInt32(byte)) }
        for value in means + scales + weights + [bias, threshold] { mix(value.bitPattern) }
        let hex = String(hash >> 32, radix: 16)
        return "\(name)@" + String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// The logit (log-odds of a face) of a feature vector of the model's spec.
    public func score(_ features: [Float]) -> Float {
        precondition(features.count == foldedWeights.count, "feature vector does not match the model's spec")
        return Dot.product(features, foldedWeights) + foldedBias
    }

    /// The probability that the features come from a face.
    public func probability(_ features: [Float]) -> Float {
        LogisticRegression.sigmoid(score(features))
    }

    /// Whether the features count as a face: probability at or above `threshold`.
    public func isFace(_ features: [Float]) -> Bool {
        probability(features) >= threshold
    }

    /// Reads a model file. Throws `modelFileAccess` when the file cannot be read, `malformedModel`
    /// or `unsupportedModelVersion` for a bad file, and `featureSpecMismatch` when the model's spec
    /// is not computed here or differs from `expecting` (when given).
    public static func load(_ path: String, expecting expected: Features.Spec? = nil) throws(FaceAnalysisError) -> LinearModel {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw FaceAnalysisError(.modelFileAccess, "the model file cannot be read", path: path, cause: error.localizedDescription)
        }
        return try decode(data, path: path, expecting: expected)
    }

    /// Parses a model file's bytes; see `load(_:expecting:)` for the errors. `path` only labels errors.
    public static func decode(_ data: Data, path: String? = nil,
                              expecting expected: Features.Spec? = nil) throws(FaceAnalysisError) -> LinearModel {
        let file = try ModelFile.decode(data, path: path)
        if let expected, expected != file.featureSpec {
            throw FaceAnalysisError(.featureSpecMismatch,
                                  "the model was trained on features \(file.featureSpec), but \(expected) were asked for",
                                  path: path)
        }
        do {
            return try LinearModel(name: file.name, spec: file.featureSpec, means: file.means, scales: file.scales,
                                   weights: file.weights, bias: file.bias, threshold: file.threshold,
                                   training: file.training, evaluation: file.evaluation)
        } catch {
            throw FaceAnalysisError(error.code, error.message, path: path, cause: error.cause)
        }
    }

    /// The model file's bytes: sorted keys, pretty-printed, a final newline.
    public func encoded() throws(FaceAnalysisError) -> Data {
        try ModelFile(format: ModelFile.formatName, formatVersion: ModelFile.currentVersion, name: name,
                      featureSpec: spec, means: means, scales: scales, weights: weights, bias: bias,
                      threshold: threshold, training: training, evaluation: evaluation).encoded()
    }

    /// Writes the model file to `path` atomically. Throws `modelFileAccess` when it cannot be written.
    public func write(to path: String) throws(FaceAnalysisError) {
        let data = try encoded()
        do {
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw FaceAnalysisError(.modelFileAccess, "the model file cannot be written", path: path, cause: error.localizedDescription)
        }
    }

    /// Equal when every stored part is equal (the folded weights follow from them).
    public static func == (lhs: LinearModel, rhs: LinearModel) -> Bool {
        lhs.name == rhs.name && lhs.spec == rhs.spec && lhs.means == rhs.means && lhs.scales == rhs.scales
            && lhs.weights == rhs.weights && lhs.bias == rhs.bias && lhs.threshold == rhs.threshold
            && lhs.training == rhs.training && lhs.evaluation == rhs.evaluation
    }

    /// The same model carrying `evaluation`.
    public func with(evaluation: PhotoEvaluation) -> LinearModel {
        // The parts were valid when this model was made, so the copy cannot fail.
        (try? LinearModel(name: name, spec: spec, means: means, scales: scales, weights: weights, bias: bias,
                          threshold: threshold, training: training, evaluation: evaluation)) ?? self
    }
}
