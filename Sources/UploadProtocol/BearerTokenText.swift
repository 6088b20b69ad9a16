/// What counts as a bearer token in a token file, for the client and the receiver alike: the text
/// without surrounding spaces, tabs and line breaks (a token file ends with a newline), non-empty,
/// and with no space or control character left inside. One rule on both sides, so a receiver never
/// starts with a token that every client refuses to send.
public enum BearerTokenText {
    /// The usable token in `text`, or nil when it is empty once trimmed or holds a space, a tab,
    /// a line break or another control character inside.
    public static func usable(_ text: String) -> String? {
        let token = trimmed(text)
        guard !token.isEmpty, token.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else { return nil }
        return token
    }

    /// `text` without surrounding spaces, tabs and line breaks (and nothing else trimmed).
    public static func trimmed(_ text: String) -> String {
        let surrounding: Set<Unicode.Scalar> = [" ", "\t", "\r", "\n"]
        var scalars = Substring(text).unicodeScalars[...]
        while let first = scalars.first, surrounding.contains(first) { scalars = scalars.dropFirst() }
        while let last = scalars.last, surrounding.contains(last) { scalars = scalars.dropLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}
