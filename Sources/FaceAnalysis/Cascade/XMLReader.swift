/// A small XML reader for the subset OpenCV's FileStorage writes: a prolog, comments, elements
/// with attributes, character data and the five predefined entities. No DTDs, no namespaces, no
/// external anything. Every index is bounds-checked; malformed input throws `malformedXML` with
/// the byte offset, never traps.
struct XMLReader {
    /// Deepest element nesting accepted; OpenCV cascades nest about eight deep.
    static let maxDepth = 64

    private let bytes: [UInt8]
    private var position = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses `bytes` and returns the root element.
    static func parse(_ bytes: [UInt8]) throws(FaceAnalysisError) -> XMLElement {
        var reader = XMLReader(bytes)
        return try reader.document()
    }

    private func fail(_ what: String) -> FaceAnalysisError {
        FaceAnalysisError(.malformedXML, "\(what) at byte \(position)")
    }

    private func peek(_ offset: Int = 0) -> UInt8? {
        let i = position + offset
        return i < bytes.count ? bytes[i] : nil
    }

    private func starts(with literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        let pointer = literal.utf8Start
        for i in 0..<count where bytes[position + i] != pointer[i] { return false }
        return true
    }

    private mutating func skip(past literal: StaticString, what: String) throws(FaceAnalysisError) {
        while position < bytes.count {
            if starts(with: literal) {
                position += literal.utf8CodeUnitCount
                return
            }
            position += 1
        }
        throw fail("unterminated \(what)")
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }

    private static func isNameByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39)
            || b == 0x5F || b == 0x2D || b == 0x2E || b == 0x3A || b >= 0x80
    }

    private mutating func skipSpace() {
        while let b = peek(), Self.isSpace(b) { position += 1 }
    }

    /// Skips whitespace, comments, processing instructions and a doctype between elements.
    private mutating func skipMisc() throws(FaceAnalysisError) {
        while true {
            skipSpace()
            if starts(with: "<?") {
                try skip(past: "?>", what: "processing instruction")
            } else if starts(with: "<!--") {
                try skip(past: "-->", what: "comment")
            } else if starts(with: "<!DOCTYPE") {
                try skip(past: ">", what: "doctype")
            } else {
                return
            }
        }
    }

    private mutating func document() throws(FaceAnalysisError) -> XMLElement {
        if starts(with: "\u{FEFF}") { position += 3 }
        try skipMisc()
        guard peek() == UInt8(ascii: "<") else {
            throw fail(bytes.isEmpty ? "empty document" : "no root element")
        }
        let root = try element(depth: 0)
        try skipMisc()
        guard position == bytes.count else { throw fail("content after the root element") }
        return root
    }

    private mutating func name() throws(FaceAnalysisError) -> String {
        let start = position
        while let b = peek(), Self.isNameByte(b) { position += 1 }
        guard position > start else { throw fail("expected a name") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// Parses one element; `position` is at its `<`.
    private mutating func element(depth: Int) throws(FaceAnalysisError) -> XMLElement {
        guard depth < Self.maxDepth else { throw fail("elements nested deeper than \(Self.maxDepth)") }
        position += 1
        let tag = try name()
        var attributes: [(name: String, value: String)] = []
        while true {
            skipSpace()
            guard let b = peek() else { throw fail("unterminated start tag <\(tag)>") }
            if b == UInt8(ascii: "/") {
                guard peek(1) == UInt8(ascii: ">") else { throw fail("expected '>' after '/'") }
                position += 2
                return XMLElement(name: tag, attributes: attributes, text: "", children: [])
            }
            if b == UInt8(ascii: ">") {
                position += 1
                break
            }
            let attributeName = try name()
            skipSpace()
            guard peek() == UInt8(ascii: "=") else { throw fail("expected '=' after attribute \(attributeName)") }
            position += 1
            skipSpace()
            guard let quote = peek(), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
                throw fail("expected a quoted value for attribute \(attributeName)")
            }
            position += 1
            let start = position
            while let c = peek(), c != quote { position += 1 }
            guard position < bytes.count else { throw fail("unterminated attribute value") }
            let value = try decodeEntities(bytes[start..<position])
            position += 1
            attributes.append((attributeName, value))
        }
        var text = ""
        var children: [XMLElement] = []
        while true {
            let start = position
            while let b = peek(), b != UInt8(ascii: "<") { position += 1 }
            if position > start { text += try decodeEntities(bytes[start..<position]) }
            guard position < bytes.count else { throw fail("unterminated element <\(tag)>") }
            if starts(with: "<!--") {
                try skip(past: "-->", what: "comment")
            } else if starts(with: "<![CDATA[") {
                position += 9
                let cdataStart = position
                try skip(past: "]]>", what: "CDATA section")
                text += String(decoding: bytes[cdataStart..<(position - 3)], as: UTF8.self)
            } else if starts(with: "<?") {
                try skip(past: "?>", what: "processing instruction")
            } else if starts(with: "</") {
                position += 2
                let closing = try name()
                guard closing == tag else { throw fail("</\(closing)> closes <\(tag)>") }
                skipSpace()
                guard peek() == UInt8(ascii: ">") else { throw fail("expected '>' in end tag") }
                position += 1
                return XMLElement(name: tag, attributes: attributes, text: text, children: children)
            } else {
                children.append(try element(depth: depth + 1))
            }
        }
    }

    private func decodeEntities(_ slice: ArraySlice<UInt8>) throws(FaceAnalysisError) -> String {
        guard slice.contains(UInt8(ascii: "&")) else { return String(decoding: slice, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(slice.count)
        var i = slice.startIndex
        while i < slice.endIndex {
            let b = slice[i]
            guard b == UInt8(ascii: "&") else {
                out.append(b)
                i += 1
                continue
            }
            guard let end = slice[i...].firstIndex(of: UInt8(ascii: ";")), end - i <= 8 else {
                throw FaceAnalysisError(.malformedXML, "unterminated entity at byte \(i)")
            }
            switch String(decoding: slice[(i + 1)..<end], as: UTF8.self) {
            case "lt": out.append(UInt8(ascii: "<"))
            case "gt": out.append(UInt8(ascii: ">"))
            case "amp": out.append(UInt8(ascii: "&"))
            case "quot": out.append(UInt8(ascii: "\""))
            case "apos": out.append(UInt8(ascii: "'"))
            case let other: throw FaceAnalysisError(.malformedXML, "unknown entity &\(other); at byte \(i)")
            }
            i = end + 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
