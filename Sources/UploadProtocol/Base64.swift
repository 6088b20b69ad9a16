/// Standard base64 (RFC 4648, with padding), for `Repr-Digest` and sf-binary values.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes bytes with padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            out += [alphabet[n >> 18 & 63], alphabet[n >> 12 & 63], alphabet[n >> 6 & 63], alphabet[n & 63]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = Int(bytes[i]) << 16
            out += [alphabet[n >> 18 & 63], alphabet[n >> 12 & 63], 61, 61]
        } else if rest == 2 {
            let n = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8
            out += [alphabet[n >> 18 & 63], alphabet[n >> 12 & 63], alphabet[n >> 6 & 63], 61]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes padded or unpadded base64; nil on any other character.
    public static func decode(_ text: String) -> [UInt8]? {
        var values: [Int] = []
        for c in text.utf8 where c != 61 {  // '='
            switch c {
            case 65...90: values.append(Int(c) - 65)
            case 97...122: values.append(Int(c) - 71)
            case 48...57: values.append(Int(c) + 4)
            case 43: values.append(62)
            case 47: values.append(63)
            default: return nil
            }
        }
        if values.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < values.count {
            let chunk = values[i..<min(i + 4, values.count)]
            var n = 0
            for (k, v) in chunk.enumerated() { n |= v << (18 - 6 * k) }
            out.append(UInt8(n >> 16 & 255))
            if chunk.count > 2 { out.append(UInt8(n >> 8 & 255)) }
            if chunk.count > 3 { out.append(UInt8(n & 255)) }
            i += 4
        }
        return out
    }
}
