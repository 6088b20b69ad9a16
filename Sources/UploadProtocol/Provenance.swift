/// Where a photo came from, sent with every upload so the server knows the photo's place in the
/// library and its dates, not just its bytes: the relative path, the file's modification time and
/// size, and the EXIF `DateTimeOriginal` when the photo has one.
///
/// On the wire (HTTP destinations) each field is one request header, ASCII only, sent on every
/// request of an upload like the verdict (the creation and every append):
///
///     X-Photo-Path: 2024/Holiday/caf%E9.jpg      the path's bytes, percent-encoded (`percentEncode`)
///     X-Photo-Mtime: 2024-07-01T09:30:00.123456789Z   RFC 3339, UTC, nanoseconds
///     X-Photo-Size: 2481516                       bytes
///     X-Photo-Taken: 2024:07:01 11:29:58          EXIF DateTimeOriginal as written (percent-encoded)
///
/// The path is bytes, not text: a file name that is not valid UTF-8 travels unchanged. S3
/// destinations carry the same values as `x-amz-meta-path`, `-mtime`, `-size` and `-taken`.
public struct Provenance: Sendable, Equatable {
    /// The path relative to the library root, `/`-separated, as the file system's bytes.
    public var path: [UInt8]
    /// Modification time in nanoseconds since the epoch.
    public var mtimeNanoseconds: Int64
    /// Size in bytes.
    public var size: Int64
    /// EXIF `DateTimeOriginal` (`YYYY:MM:DD HH:MM:SS`), nil when the photo has none.
    public var dateTimeOriginal: String?

    /// Creates provenance.
    public init(path: [UInt8], mtimeNanoseconds: Int64, size: Int64, dateTimeOriginal: String? = nil) {
        self.path = path
        self.mtimeNanoseconds = mtimeNanoseconds
        self.size = size
        self.dateTimeOriginal = dateTimeOriginal
    }

    /// The request header names (lowercase, as both sides compare them).
    public enum Header {
        public static let path = "x-photo-path"
        public static let mtime = "x-photo-mtime"
        public static let size = "x-photo-size"
        public static let taken = "x-photo-taken"
    }

    /// The headers carrying this provenance, in order.
    public var headers: [(name: String, value: String)] {
        var list: [(name: String, value: String)] = [
            (Header.path, Self.percentEncode(path)),
            (Header.mtime, Self.rfc3339(nanoseconds: mtimeNanoseconds)),
            (Header.size, String(size)),
        ]
        if let dateTimeOriginal { list.append((Header.taken, Self.percentEncode(Array(dateTimeOriginal.utf8), keeping: " :"))) }
        return list
    }

    /// Why headers could not be read as provenance.
    public struct Malformed: Error, Sendable, Equatable {
        /// The header at fault and what is wrong, for a 400's text.
        public let reason: String
    }

    /// Provenance from request headers (looked up by lowercase name): nil when the request has
    /// no `X-Photo-Path` (the others are then ignored); throws `Malformed` when a present field
    /// cannot be read.
    public static func parse(_ header: (String) -> String?) throws(Malformed) -> Provenance? {
        guard let pathText = header(Header.path) else { return nil }
        guard pathText.utf8.count <= 8192, let path = percentDecode(pathText), !path.isEmpty, !path.contains(0) else {
            throw Malformed(reason: "malformed X-Photo-Path (percent-encoded bytes, at most 8 KiB, no NUL)")
        }
        guard let mtimeText = header(Header.mtime), let mtime = nanoseconds(fromRFC3339: mtimeText) else {
            throw Malformed(reason: "X-Photo-Path needs an X-Photo-Mtime in RFC 3339 (UTC, Z)")
        }
        guard let sizeText = header(Header.size), let size = Int64(sizeText), size >= 0 else {
            throw Malformed(reason: "X-Photo-Path needs an X-Photo-Size in bytes")
        }
        var taken: String?
        if let text = header(Header.taken) {
            guard text.utf8.count <= 256, let bytes = percentDecode(text), let value = String(validating: bytes, as: UTF8.self) else {
                throw Malformed(reason: "malformed X-Photo-Taken")
            }
            taken = value
        }
        return Provenance(path: path, mtimeNanoseconds: mtime, size: size, dateTimeOriginal: taken)
    }

    // MARK: Encodings

    /// Bytes as ASCII: letters, digits, `-._~/` and the bytes of `keeping` as they are, every
    /// other byte as `%HH` (upper-case hex). Reversible by `percentDecode` for any bytes.
    public static func percentEncode(_ bytes: [UInt8], keeping: String = "") -> String {
        let kept = Array(keeping.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        let digits = Array("0123456789ABCDEF".utf8)
        for byte in bytes {
            let plain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E || byte == 0x2F || kept.contains(byte)
            if plain {
                out.append(byte)
            } else {
                out += [0x25, digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a percent-encoded text; nil for a `%` not followed by two hex digits or a
    /// character outside printable ASCII.
    public static func percentDecode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x41 + 10
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        while let c = bytes.popFirst() {
            guard c >= 0x20 && c < 0x7F else { return nil }
            if c == 0x25 {
                guard bytes.count >= 2, let hi = hex(bytes[bytes.startIndex]), let lo = hex(bytes[bytes.startIndex + 1]) else {
                    return nil
                }
                out.append(hi << 4 | lo)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(c)
            }
        }
        return out
    }

    /// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` for nanoseconds since the epoch (proleptic Gregorian, UTC).
    public static func rfc3339(nanoseconds: Int64) -> String {
        var seconds = nanoseconds / 1_000_000_000
        var nanos = nanoseconds % 1_000_000_000
        if nanos < 0 { nanos += 1_000_000_000; seconds -= 1 }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ n: Int64, _ width: Int) -> String {
            let text = String(n)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):"
            + "\(pad(secondOfDay % 60, 2)).\(pad(nanos, 9))Z"
    }

    /// Nanoseconds since the epoch from `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (UTC only), or nil.
    public static func nanoseconds(fromRFC3339 text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40, bytes.last == UInt8(ascii: "Z") || bytes.last == UInt8(ascii: "z") else {
            return nil
        }
        func number(_ range: Range<Int>) -> Int64? {
            var n: Int64 = 0
            for b in bytes[range] {
                guard b >= 0x30 && b <= 0x39 else { return nil }
                n = n * 10 + Int64(b - 0x30)
            }
            return n
        }
        guard bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54 || bytes[10] == 0x74, bytes[13] == 0x3A, bytes[16] == 0x3A,
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var nanos: Int64 = 0
        let rest = bytes[19..<(bytes.count - 1)]
        if !rest.isEmpty {
            guard rest.first == 0x2E, rest.count >= 2, rest.count <= 10, let fraction = number((rest.startIndex + 1)..<rest.endIndex) else {
                return nil
            }
            nanos = fraction
            for _ in 0..<(10 - rest.count) { nanos *= 10 }
        }
        // days_from_civil
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return (days * 86_400 + hour * 3600 + minute * 60 + second) * 1_000_000_000 + nanos
    }
}
