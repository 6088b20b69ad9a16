/// A bearer token for the `Authorization` header. Its description is redacted, so printing a
/// configuration, an error or a log line can never reveal it.
public struct BearerToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret itself; read it only to build the header.
    let secret: String

    /// Wraps a token, trimming surrounding whitespace and newlines (token files end with one).
    /// Returns nil when the token is empty or contains control characters or spaces.
    public init?(_ token: String) {
        let trimmed = token.trimmingCharacters(in: " \t\r\n")
        guard !trimmed.isEmpty, trimmed.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            return nil
        }
        secret = trimmed
    }

    /// The `Authorization` header value.
    var headerValue: String { "Bearer " + secret }

    /// Always `BearerToken(redacted)`.
    public var description: String { "BearerToken(redacted)" }
    /// Always `BearerToken(redacted)`.
    public var debugDescription: String { description }
}

private extension String {
    func trimmingCharacters(in set: String) -> String {
        let skip = Set(set.unicodeScalars)
        var scalars = Substring(self).unicodeScalars[...]
        while let first = scalars.first, skip.contains(first) { scalars = scalars.dropFirst() }
        while let last = scalars.last, skip.contains(last) { scalars = scalars.dropLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}
