import UploadProtocol

/// A bearer token for the `Authorization` header. Its description is redacted, so printing a
/// configuration, an error or a log line can never reveal it.
public struct BearerToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret itself; read it only to build the header.
    let secret: String

    /// Wraps a token, trimming surrounding whitespace and newlines (token files end with one).
    /// Returns nil when the token is empty or contains control characters or spaces
    /// (`BearerTokenText.usable`, the rule `serve` checks its token file with too).
    public init?(_ token: String) {
        guard let usable = BearerTokenText.usable(token) else { return nil }
        secret = usable
    }

    /// The `Authorization` header value.
    var headerValue: String { "Bearer " + secret }

    /// Always `BearerToken(redacted)`.
    public var description: String { "BearerToken(redacted)" }
    /// Always `BearerToken(redacted)`.
    public var debugDescription: String { description }
}
