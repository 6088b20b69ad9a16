/// What a model was trained on and how, stored in the model file for its model card and for audit.
public struct TrainingMetadata: Codable, Sendable, Equatable {
    /// Face samples used in all (training plus held out).
    public var positives: Int
    /// Non-face samples used in all.
    public var negatives: Int
    /// Samples (images) the weights were fitted on.
    public var trainingCount: Int
    /// Vectors the weights were fitted on: the training samples and their augmented variants.
    public var trainingVectors: Int
    /// Samples held out for the metrics.
    public var heldOutCount: Int
    /// The fraction of each class asked to be held out.
    public var holdout: Double
    /// The seed of the holdout split.
    public var seed: UInt64
    /// The L2 penalty on the standardised weights.
    public var l2: Float
    /// Gradient-descent iterations run.
    public var iterations: Int
    /// The regularised, class-balanced log loss at the end of training.
    public var finalLoss: Float
    /// Metrics on the training vectors themselves (augmented variants included).
    public var trainingMetrics: HeldOutMetrics
    /// Metrics on the held-out samples; nil when nothing was held out.
    public var heldOutMetrics: HeldOutMetrics?

    /// Metadata from its parts.
    public init(positives: Int, negatives: Int, trainingCount: Int, trainingVectors: Int, heldOutCount: Int, holdout: Double,
                seed: UInt64, l2: Float, iterations: Int, finalLoss: Float,
                trainingMetrics: HeldOutMetrics, heldOutMetrics: HeldOutMetrics?) {
        self.positives = positives
        self.negatives = negatives
        self.trainingCount = trainingCount
        self.trainingVectors = trainingVectors
        self.heldOutCount = heldOutCount
        self.holdout = holdout
        self.seed = seed
        self.l2 = l2
        self.iterations = iterations
        self.finalLoss = finalLoss
        self.trainingMetrics = trainingMetrics
        self.heldOutMetrics = heldOutMetrics
    }
}
