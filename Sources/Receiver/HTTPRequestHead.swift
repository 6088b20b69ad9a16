/// A parsed HTTP/1.1 request line and header section. Header names are lowercased; repeated
/// fields are joined with ", " (RFC 9110 5.3), except that conflicting `Content-Length` values are
/// rejected.
struct HTTPRequestHead: Sendable {
    /// Why a request head was refused: the status to answer and a short reason for the log.
    struct ParseError: Error, Sendable {
        let status: Int
        let reason: String
    }

    var method: String
    /// The path part of the request target (no query), still percent-encoded.
    var path: String
    /// HTTP/1.0 or HTTP/1.1.
    var minorVersion: Int
    var headers: [String: String]

    /// The value of a header by lowercase name.
    subscript(_ name: String) -> String? { headers[name] }

    /// True when the client asked to keep the connection open after this exchange.
    var keepAlive: Bool {
        let tokens = (headers["connection"] ?? "").lowercased().split(separator: ",")
            .map { $0.trimmingSpaces() }
        if minorVersion == 0 { return tokens.contains("keep-alive") }
        return !tokens.contains("close")
    }

    /// Parses the bytes of a head, from the request line up to (not including) the empty line.
    init(parsing bytes: ArraySlice<UInt8>, maxRequestLineBytes: Int, maxHeaderCount: Int) throws(ParseError) {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] == 10 {  // LF; the CR before it is required
                guard i > start, bytes[i - 1] == 13 else { throw ParseError(status: 400, reason: "bare LF in head") }
                lines.append(bytes[start..<(i - 1)])
                start = i + 1
            }
            i += 1
        }
        if start < bytes.endIndex { lines.append(bytes[start...]) }
        guard let requestLine = lines.first else { throw ParseError(status: 400, reason: "empty request") }
        if requestLine.count > maxRequestLineBytes { throw ParseError(status: 414, reason: "request line too long") }

        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw ParseError(status: 400, reason: "malformed request line") }
        let method = String(decoding: parts[0], as: UTF8.self)
        guard !method.isEmpty, parts[0].allSatisfy(Self.isTokenByte) else {
            throw ParseError(status: 400, reason: "malformed method")
        }
        let target = parts[1]
        guard !target.isEmpty, target.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw ParseError(status: 400, reason: "malformed request target")
        }
        switch String(decoding: parts[2], as: UTF8.self) {
        case "HTTP/1.1": minorVersion = 1
        case "HTTP/1.0": minorVersion = 0
        default: throw ParseError(status: 505, reason: "unsupported HTTP version")
        }
        var pathBytes = target
        if let question = target.firstIndex(of: UInt8(ascii: "?")) { pathBytes = target[..<question] }
        let path = String(decoding: pathBytes, as: UTF8.self)
        guard path.hasPrefix("/") || (method == "OPTIONS" && path == "*") else {
            throw ParseError(status: 400, reason: "request target is not origin-form")
        }
        self.method = method
        self.path = path

        let fieldLines = lines.dropFirst()
        if fieldLines.count > maxHeaderCount { throw ParseError(status: 431, reason: "too many header fields") }
        var headers: [String: String] = [:]
        for line in fieldLines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw ParseError(status: 400, reason: "header line without colon")
            }
            let nameBytes = line[line.startIndex..<colon]
            guard !nameBytes.isEmpty, nameBytes.allSatisfy(Self.isTokenByte) else {
                // Covers obsolete line folding (leading space) and space before the colon.
                throw ParseError(status: 400, reason: "malformed header name")
            }
            let valueBytes = line[(colon + 1)...]
            guard valueBytes.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else {
                throw ParseError(status: 400, reason: "control character in header value")
            }
            let name = String(decoding: nameBytes, as: UTF8.self).lowercased()
            let value = String(decoding: valueBytes, as: UTF8.self).trimmingSpaces()
            if let existing = headers[name] {
                if name == "content-length" {
                    guard existing == value else { throw ParseError(status: 400, reason: "conflicting Content-Length") }
                    continue
                }
                if name == "host" { throw ParseError(status: 400, reason: "repeated Host") }
                headers[name] = existing + ", " + value
            } else {
                headers[name] = value
            }
        }
        if minorVersion == 1 && headers["host"] == nil { throw ParseError(status: 400, reason: "missing Host") }
        self.headers = headers
    }

    /// The declared body length: nil for none. Throws 400 for a malformed length, 411 for chunked
    /// bodies (which this receiver does not accept: clients send Content-Length), 501 for any other
    /// transfer coding.
    func contentLength() throws(ParseError) -> Int64? {
        if let coding = headers["transfer-encoding"] {
            if headers["content-length"] != nil {
                throw ParseError(status: 400, reason: "both Transfer-Encoding and Content-Length")
            }
            if coding.lowercased().split(separator: ",").last?.trimmingSpaces() == "chunked" {
                throw ParseError(status: 411, reason: "chunked request bodies are not accepted; send Content-Length")
            }
            throw ParseError(status: 501, reason: "unsupported transfer coding")
        }
        guard let text = headers["content-length"] else { return nil }
        guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let length = Int64(text) else {
            throw ParseError(status: 400, reason: "malformed Content-Length")
        }
        return length
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        let text = Substring(self)
        guard let first = text.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = text.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return String(text[first...last])
    }
}
