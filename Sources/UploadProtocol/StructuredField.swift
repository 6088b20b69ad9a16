/// A parsed Structured Field value (RFC 8941), as far as the resumable-upload headers need them.
public enum StructuredItem: Sendable, Equatable {
    case integer(Int64)
    case decimal(Double)
    case string(String)
    case token(String)
    case bytes([UInt8])
    case boolean(Bool)
    /// An inner list of items (parameters on the inner items are dropped).
    case innerList([StructuredItem])
}

/// RFC 8941 parsing and serialisation for the three shapes the protocol uses: an integer
/// (`Upload-Offset`, `Upload-Length`, `Upload-Draft-Interop-Version`), a boolean (`Upload-Complete`)
/// and a dictionary (`Upload-Limit`). Anything malformed parses as nil: per RFC 8941 the whole field
/// is then ignored.
public enum StructuredField {
    /// An sf-integer alone (surrounding spaces allowed), or nil.
    public static func integer(_ value: String) -> Int64? {
        var parser = Parser(value)
        guard case .integer(let n)? = parser.parseWholeItem() else { return nil }
        return n
    }

    /// An sf-boolean alone (`?0` / `?1`), or nil.
    public static func boolean(_ value: String) -> Bool? {
        var parser = Parser(value)
        guard case .boolean(let b)? = parser.parseWholeItem() else { return nil }
        return b
    }

    /// An sf-dictionary as ordered (key, item) pairs, or nil when malformed. Parameters are parsed
    /// and dropped; a member without `=` is `true`, as RFC 8941 says. A later duplicate key wins.
    public static func dictionary(_ value: String) -> [(key: String, value: StructuredItem)]? {
        var parser = Parser(value)
        return parser.parseDictionary()
    }

    /// Serialises a dictionary of integers and booleans.
    public static func serialize(_ members: [(key: String, value: StructuredItem)]) -> String {
        members.map { key, value in
            if case .boolean(true) = value { return key }
            return "\(key)=\(serialize(value))"
        }.joined(separator: ", ")
    }

    /// Serialises one bare item.
    public static func serialize(_ item: StructuredItem) -> String {
        switch item {
        case .integer(let n): return String(n)
        case .decimal(let d): return String(format3(d))
        case .string(let s):
            var out = "\""
            for c in s {
                if c == "\\" || c == "\"" { out.append("\\") }
                out.append(c)
            }
            return out + "\""
        case .token(let t): return t
        case .bytes(let b): return ":" + Base64.encode(b) + ":"
        case .boolean(let b): return b ? "?1" : "?0"
        case .innerList(let items): return "(" + items.map(serialize).joined(separator: " ") + ")"
        }
    }

    private static func format3(_ d: Double) -> String {
        let scaled = (d * 1000).rounded() / 1000
        var s = String(scaled)
        if !s.contains(".") { s += ".0" }
        return s
    }
}

/// A byte-level RFC 8941 parser over ASCII.
private struct Parser {
    let bytes: [UInt8]
    var i = 0

    init(_ s: String) { bytes = Array(s.utf8) }

    var atEnd: Bool { i >= bytes.count }
    var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

    mutating func skipSP() { while peek == 0x20 { i += 1 } }
    mutating func skipOWS() { while peek == 0x20 || peek == 0x09 { i += 1 } }

    mutating func parseWholeItem() -> StructuredItem? {
        skipSP()
        guard let item = parseBareItem(), skipParameters() else { return nil }
        skipSP()
        return atEnd ? item : nil
    }

    mutating func parseDictionary() -> [(key: String, value: StructuredItem)]? {
        var members: [(key: String, value: StructuredItem)] = []
        skipSP()
        if atEnd { return members }
        while true {
            guard let key = parseKey() else { return nil }
            let value: StructuredItem
            if peek == UInt8(ascii: "=") {
                i += 1
                if peek == UInt8(ascii: "(") {
                    guard let list = parseInnerList() else { return nil }
                    value = list
                } else {
                    guard let item = parseBareItem() else { return nil }
                    value = item
                }
            } else {
                value = .boolean(true)
            }
            guard skipParameters() else { return nil }
            members.removeAll { $0.key == key }
            members.append((key, value))
            skipOWS()
            if atEnd { return members }
            guard peek == UInt8(ascii: ",") else { return nil }
            i += 1
            skipOWS()
            if atEnd { return nil }  // a trailing comma is malformed
        }
    }

    mutating func parseInnerList() -> StructuredItem? {
        guard peek == UInt8(ascii: "(") else { return nil }
        i += 1
        var items: [StructuredItem] = []
        while !atEnd {
            skipSP()
            if peek == UInt8(ascii: ")") {
                i += 1
                return .innerList(items)
            }
            guard let item = parseBareItem(), skipParameters() else { return nil }
            items.append(item)
            guard peek == 0x20 || peek == UInt8(ascii: ")") else { return nil }
        }
        return nil
    }

    /// Parses `;key[=item]` parameters; false when malformed.
    mutating func skipParameters() -> Bool {
        while peek == UInt8(ascii: ";") {
            i += 1
            skipSP()
            guard parseKey() != nil else { return false }
            if peek == UInt8(ascii: "=") {
                i += 1
                guard parseBareItem() != nil else { return false }
            }
        }
        return true
    }

    mutating func parseKey() -> String? {
        guard let c = peek, isLCAlpha(c) || c == UInt8(ascii: "*") else { return nil }
        let start = i
        while let c = peek, isLCAlpha(c) || isDigit(c) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "*") {
            i += 1
        }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    mutating func parseBareItem() -> StructuredItem? {
        guard let c = peek else { return nil }
        if c == UInt8(ascii: "-") || isDigit(c) { return parseNumber() }
        if c == UInt8(ascii: "\"") { return parseString() }
        if c == UInt8(ascii: ":") { return parseBytes() }
        if c == UInt8(ascii: "?") {
            i += 1
            guard let b = peek else { return nil }
            i += 1
            if b == UInt8(ascii: "1") { return .boolean(true) }
            if b == UInt8(ascii: "0") { return .boolean(false) }
            return nil
        }
        if isAlpha(c) || c == UInt8(ascii: "*") { return parseToken() }
        return nil
    }

    mutating func parseNumber() -> StructuredItem? {
        var negative = false
        if peek == UInt8(ascii: "-") { negative = true; i += 1 }
        guard let first = peek, isDigit(first) else { return nil }
        let start = i
        var isDecimal = false
        while let c = peek {
            if isDigit(c) {
                i += 1
            } else if c == UInt8(ascii: "."), !isDecimal {
                guard i - start <= 12 else { return nil }
                isDecimal = true
                i += 1
            } else {
                break
            }
            if !isDecimal && i - start > 15 { return nil }
            if isDecimal && i - start > 16 { return nil }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if isDecimal {
            guard !text.hasSuffix("."), let fraction = text.split(separator: ".").last, fraction.count <= 3,
                  let d = Double(text) else { return nil }
            return .decimal(negative ? -d : d)
        }
        guard let n = Int64(text) else { return nil }
        return .integer(negative ? -n : n)
    }

    mutating func parseString() -> StructuredItem? {
        i += 1
        var out: [UInt8] = []
        while let c = peek {
            i += 1
            if c == UInt8(ascii: "\\") {
                guard let next = peek, next == UInt8(ascii: "\\") || next == UInt8(ascii: "\"") else { return nil }
                out.append(next)
                i += 1
            } else if c == UInt8(ascii: "\"") {
                return .string(String(decoding: out, as: UTF8.self))
            } else if c < 0x20 || c > 0x7E {
                return nil
            } else {
                out.append(c)
            }
        }
        return nil
    }

    mutating func parseToken() -> StructuredItem? {
        let start = i
        while let c = peek, isTChar(c) || c == UInt8(ascii: ":") || c == UInt8(ascii: "/") { i += 1 }
        return .token(String(decoding: bytes[start..<i], as: UTF8.self))
    }

    mutating func parseBytes() -> StructuredItem? {
        i += 1
        let start = i
        while let c = peek, c != UInt8(ascii: ":") {
            guard isAlpha(c) || isDigit(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "/")
                    || c == UInt8(ascii: "=") else { return nil }
            i += 1
        }
        guard peek == UInt8(ascii: ":") else { return nil }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        i += 1
        guard let decoded = Base64.decode(text) else { return nil }
        return .bytes(decoded)
    }

    func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    func isLCAlpha(_ c: UInt8) -> Bool { c >= 0x61 && c <= 0x7A }
    func isAlpha(_ c: UInt8) -> Bool { isLCAlpha(c) || (c >= 0x41 && c <= 0x5A) }
    func isTChar(_ c: UInt8) -> Bool {
        isAlpha(c) || isDigit(c) || "!#$%&'*+-.^_`|~".utf8.contains(c)
    }
}
