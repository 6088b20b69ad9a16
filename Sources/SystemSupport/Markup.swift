/// Escaping for XML and HTML text: the S3 request bodies and the report pages share it.
public enum Markup {
    /// `text` safe in XML or HTML element content and in single- or double-quoted attribute
    /// values: `& < > " '` become entities (`'` as `&#39;`, which HTML 4 knows too).
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
