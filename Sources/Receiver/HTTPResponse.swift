import Foundation

/// An HTTP/1.1 response (final or informational) ready to be serialised.
struct HTTPResponse: Sendable {
    var status: Int
    /// Fields in sending order; `Content-Length` and `Connection` are added by `serialized`.
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// The Content-Length to announce when the body is streamed separately (see
    /// `HTTPConnection.sendFile`); nil means `body.count`.
    var streamedLength: Int64?

    init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body is `text` as text/plain.
    static func text(_ status: Int, _ text: String, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers + [("Content-Type", "text/plain; charset=utf-8")],
                     body: Array((text + "\n").utf8))
    }

    /// An RFC 9457 problem: `application/problem+json` with `type`, `title`, `status`, an optional
    /// `detail` and extension members (strings or integers), JSON-escaped.
    static func problem(_ status: Int, type: String, title: String, detail: String? = nil,
                        strings: [String: String] = [:], numbers: [String: Int64] = [:],
                        headers: [(name: String, value: String)] = []) -> HTTPResponse {
        var members: [String: Any] = ["type": type, "title": title, "status": status]
        if let detail { members["detail"] = detail }
        for (key, value) in strings { members[key] = value }
        for (key, value) in numbers { members[key] = value }
        let body = (try? JSONSerialization.data(withJSONObject: members, options: [.sortedKeys, .withoutEscapingSlashes]))
            .map { Array($0) } ?? Array("{}".utf8)
        return HTTPResponse(status: status, headers: headers + [("Content-Type", "application/problem+json")], body: body)
    }

    /// Adds a field.
    mutating func add(_ name: String, _ value: String) {
        headers.append((name, value))
    }

    /// The bytes on the wire. `close` adds `Connection: close`; `headOnly` omits the body but keeps
    /// its length (a response to HEAD).
    func serialized(close: Bool, headOnly: Bool = false) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(Self.reasonPhrase(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        let informational = status >= 100 && status < 200
        if !informational && status != 204 && status != 304 {
            text += "Content-Length: \(streamedLength ?? Int64(body.count))\r\n"
        }
        if close && !informational { text += "Connection: close\r\n" }
        text += "\r\n"
        var bytes = Array(text.utf8)
        if !headOnly && !informational && status != 204 { bytes += body }
        return bytes
    }

    /// The standard reason phrase for the statuses this receiver sends.
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 104: return "Upload Resumption Supported"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 429: return "Too Many Requests"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        case 507: return "Insufficient Storage"
        default: return "Status \(status)"
        }
    }
}
