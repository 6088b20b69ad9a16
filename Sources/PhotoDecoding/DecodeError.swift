/// Why a photo could not be probed or decoded. Every case has a stable `code` (for the store and
/// for machines) and a `message` a person can act on; the photo's path travels with the error.
public struct DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable classes of decoding failure.
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// The file could not be opened or read (missing, permissions, removed since the probe).
        case unreadable
        /// The file is empty.
        case empty
        /// The bytes are not JPEG, PNG, HEIF or WebP, or use a feature PhotoDrain does not decode
        /// (a HEIF codec libheif lacks, an animated WebP).
        case unsupportedFormat = "unsupported-format"
        /// The library rejected the data: corrupt, truncated or malformed.
        case corrupt
        /// The header claims more pixels than the configured ceiling (a decompression bomb).
        case tooLarge = "too-large"
        /// A request the decoder cannot satisfy (bad scale, bad geometry).
        case invalidRequest = "invalid-request"
    }

    /// The class of failure.
    public let code: Code
    /// What went wrong, in words; for `corrupt` this is the library's own message.
    public let message: String
    /// The file, when the error is about one.
    public let path: String?

    public init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    public var description: String {
        if let path { return "\(path): \(code.rawValue): \(message)" }
        return "\(code.rawValue): \(message)"
    }
}
