/// Why feature extraction, training, a model file or a verdict failed. Every case has a stable
/// `code` (for the store, for tests and for machines) and a `message` a person can act on; the
/// file and the underlying cause travel with it when there is one.
public struct ClassifierError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable classes of failure.
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// A model file could not be read from disk or written to it.
        case modelFileAccess = "model-file-access"
        /// A model file is not valid JSON of the model format, or its arrays do not fit together.
        case malformedModel = "malformed-model"
        /// A model file's format version is not one this build reads.
        case unsupportedModelVersion = "unsupported-model-version"
        /// A model was trained on a feature layout other than the one asked for or computable here.
        case featureSpecMismatch = "feature-spec-mismatch"
        /// A face region is empty or lies wholly outside the image.
        case invalidRegion = "invalid-region"
        /// A training image could not be listed or decoded.
        case unreadableSample = "unreadable-sample"
        /// The training data cannot fit a classifier: no samples, one class only, too few to hold out.
        case insufficientData = "insufficient-data"
        /// A training or extraction parameter is out of range.
        case invalidParameter = "invalid-parameter"
        /// A verdict could not be encoded or decoded as JSON.
        case malformedVerdict = "malformed-verdict"
    }

    /// The class of failure.
    public let code: Code
    /// What went wrong, in words.
    public let message: String
    /// The file concerned, when there is one.
    public let path: String?
    /// The underlying error's description (a decoder's or the file system's), when there is one.
    public let cause: String?

    /// An error of class `code`, about `path` when given, caused by `cause` when given.
    public init(_ code: Code, _ message: String, path: String? = nil, cause: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.cause = cause
    }

    /// `path: code: message (cause)`, leaving out the parts that are absent.
    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let path { text = "\(path): " + text }
        if let cause { text += " (\(cause))" }
        return text
    }
}
