import SystemSupport

/// Lowercase hexadecimal text of bytes, and back: SHA-256 digests on the wire and in the stores,
/// path bytes that are not UTF-8 in the asset store, random upload ids.
public enum Hex {
    /// Two lowercase hex digits per byte (`SHA256.hex`: one spelling of the digits for the
    /// whole project).
    public static func string(_ bytes: [UInt8]) -> String {
        SHA256.hex(bytes)
    }

    /// The bytes of hex text in either case; nil unless it is an even run of hex digits.
    public static func bytes(fromHex text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let high = nibble(chars[i]), let low = nibble(chars[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
