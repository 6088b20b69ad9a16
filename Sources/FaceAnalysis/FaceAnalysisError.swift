/// Why a cascade could not be loaded or an analysis request could not be run. Every case has a
/// stable `code` for machines and a `message` a person can act on.
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
        /// A parameter is out of its domain (scale factor not above 1, negative sizes).
        case invalidParameter = "invalid-parameter"
    }

    /// The class of failure.
    public let code: Code
    /// What went wrong, in words.
    public let message: String
    /// The file, when the error is about one.
    public let path: String?

    /// An error of class `code` with `message`, about `path` when given.
    public init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// The same error, now naming the file it is about.
    func about(_ path: String) -> FaceAnalysisError {
        FaceAnalysisError(code, message, path: path)
    }

    /// `path: code: message`, or `code: message` when no file is involved.
    public var description: String {
        if let path { return "\(path): \(code.rawValue): \(message)" }
        return "\(code.rawValue): \(message)"
    }
}
