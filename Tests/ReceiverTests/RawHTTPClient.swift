#if canImport(Glibc)
import Glibc
#endif
import TestSupport

/// A deliberately tiny HTTP/1.1 client over a loopback socket, for speaking to the receiver byte by
/// byte: it can send malformed requests, stop in the middle of a body, and read interim (1xx)
/// responses before the final one. Not a general client: bodies are framed by Content-Length.
final class RawHTTPClient {
    struct Response {
        var status: Int
        /// Lowercased names; repeated fields keep the last value.
        var headers: [String: String]
        var body: [UInt8]

        subscript(_ name: String) -> String? { headers[name] }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct ClientError: Error, CustomStringConvertible {
        let description: String
    }

    let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port` (from the loopback address `source`, when given); reads give
    /// up after 20 s so a broken server fails a test instead of hanging it.
    init(port: Int, from source: String? = nil) throws {
        guard let port = UInt16(exactly: port), let fd = LoopbackSocket.connect(port: port, from: source) else {
            throw ClientError(description: "connect failed: errno \(errno)")
        }
        self.fd = fd
        LoopbackSocket.setReadTimeout(fd, seconds: 20)
    }

    deinit { LoopbackSocket.close(fd) }

    /// Makes reads give up after `seconds` instead of 20 s (a test that wants an answer "at once").
    func setReadTimeout(seconds: Double) {
        LoopbackSocket.setReadTimeout(fd, seconds: seconds)
    }

    /// Sends raw bytes; false if the server has gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        LoopbackSocket.writeAll(fd, bytes)
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Sends a request head (adding Host and, when `body` is given, Content-Length) and the body.
    @discardableResult
    func sendRequest(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) -> Bool {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return send(Array(head.utf8) + (body ?? []))
    }

    /// Reads responses until a final (non-1xx) one; returns the interim ones and the final one.
    func readResponses(forHead: Bool = false) throws -> (interim: [Response], final: Response) {
        var interim: [Response] = []
        while true {
            let response = try readOne(forHead: forHead)
            if response.status >= 100 && response.status < 200 {
                interim.append(response)
            } else {
                return (interim, response)
            }
        }
    }

    /// Reads the next response, interim or final.
    func readNext() throws -> Response {
        try readOne(forHead: false)
    }

    /// Reads one final response, skipping interim ones.
    func readResponse(forHead: Bool = false) throws -> Response {
        try readResponses(forHead: forHead).final
    }

    /// Sends a request and reads its final response.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> Response {
        guard sendRequest(method, path, headers: headers, body: body) else { throw ClientError(description: "send failed") }
        return try readResponse(forHead: method == "HEAD")
    }

    /// Half-closes: the server sees the end of the request stream, the client can still read.
    func finishSending() {
        LoopbackSocket.shutdownWrite(fd)
    }

    /// True when the server closed the connection (reads end) without sending anything more.
    func isClosedByServer() -> Bool {
        var byte: UInt8 = 0
        let n = withUnsafeMutableBytes(of: &byte) { LoopbackSocket.read(fd, into: $0) }
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { LoopbackSocket.read(fd, into: $0) }
        if n <= 0 { throw ClientError(description: "connection closed or timed out (errno \(errno))") }
        buffer += chunk[0..<n]
    }

    private func readOne(forHead: Bool) throws -> Response {
        var end: Int?
        while end == nil {
            if buffer.count >= 4 {
                for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    end = i
                    break
                }
            }
            if end == nil { try fill() }
        }
        guard let end else { throw ClientError(description: "unreachable") }
        let head = String(decoding: buffer[0..<end], as: UTF8.self)
        buffer.removeFirst(end + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw ClientError(description: "bad status line: \(head)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body: [UInt8] = []
        if !(status < 200 || status == 204 || forHead), let length = headers["content-length"].flatMap({ Int($0) }) {
            while buffer.count < length { try fill() }
            body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        }
        return Response(status: status, headers: headers, body: body)
    }
}
