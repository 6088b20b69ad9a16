/// Why FaceAnalysis failed: a cascade that could not be loaded, a detection request out of range,
/// feature extraction, training, a model file or a verdict. Every case has a stable `code` (for the
/// store, for tests and for machines) and a `message` a person can act on; the file and the
/// underlying cause travel with it when there is one.
public struct FaceAnalysisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable classes of failure.
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// The cascade file could not be opened or read.
        case unreadable
        /// The bytes are not well-formed XML (truncated, binary, unbalanced tags).
        case malformedXML = "malformed-xml"
        /// The XML is well formed but is not an OpenCV cascade, or a required field is missing or
        /// out of range.
        case invalidCascade = "invalid-cascade"
        /// A cascade kind this detector does not evaluate (stage type other than BOOST, HOG
        /// features, tree-structured stage cascades).
        case unsupportedCascade = "unsupported-cascade"
        /// A parameter is out of its domain (scale factor not above 1, negative sizes, a training
        /// or extraction parameter out of range).
        case invalidParameter = "invalid-parameter"
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
        /// A verdict could not be encoded or decoded as JSON.
        case malformedVerdict = "malformed-verdict"
    }

    /// The class of failure.
    public let code: Code
    /// What went wrong, in words.
    public let message: String
    /// The file, when the error is about one.
    public let path: String?
    /// The underlying error's description (a decoder's or the file system's), when there is one.
    public let cause: String?

    /// An error of class `code` with `message`, about `path` when given, caused by `cause` when given.
    public init(_ code: Code, _ message: String, path: String? = nil, cause: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.cause = cause
    }

    /// The same error, now naming the file it is about.
    func about(_ path: String) -> FaceAnalysisError {
        FaceAnalysisError(code, message, path: path, cause: cause)
    }

    /// `path: code: message (cause)`, leaving out the parts that are absent.
    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let path { text = "\(path): " + text }
        if let cause { text += " (\(cause))" }
        return text
    }
}
