/// Text from outside (a server's id, its Location, its error text) made safe to print on a
/// terminal: a server that sends `ESC]0;…BEL` or `ESC[2J` in a header would otherwise retitle or
/// clear the user's terminal, or forge lines of output. Transfer's error messages and the tool's
/// output share it.
public enum TerminalText {
    /// `text` with every control character shown escaped: C0 controls (line breaks and tabs
    /// among them) and DEL as `\x1b`, C1 controls (U+0080...U+009F, which some terminals obey as
    /// 8-bit escape sequences) as `\u{9b}`. Everything else, ordinary Unicode included, is kept
    /// as it is. Text without control characters comes back unchanged.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x00...0x1F, 0x7F: out += "\\x" + hex2(scalar.value)
            case 0x80...0x9F: out += "\\u{" + hex2(scalar.value) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// True for a C0 control, DEL or a C1 control.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    private static func hex2(_ value: UInt32) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(value >> 4 & 15)], digits[Int(value & 15)]])
    }
}
