import Foundation
import Synchronization
import Testing
import TestSupport

/// `upload` and `drain` against receivers that try to take more than they should (issue 31):
/// an upload URL on another origin, a server id that drives the terminal, a digest lookup that
/// says "I have it" from a server that never answered as a receiver; and a receiver written from
/// the platform's article, which must get its upload. Each is a small fake over TestSupport's
/// loopback sockets: `photodrain serve` behaves, and these must not.
@Suite(.serialized) struct HostileReceiverCLITests {
    static let fast = ["--analysis-size", "96"]
    /// A title change and a screen clear, as a hostile `x-server-resource-id` carries them, then
    /// an 8-bit CSI (U+009B, a C1 control) and DEL.
    static let terminalAttack = "\u{1B}]0;owned\u{07}\u{1B}[2J\u{9B}2J\u{7F}"

    /// The answers of a receiver that speaks the protocol, up to the creation's: discovery with
    /// limits, and no object for any digest lookup.
    static func receiverBasics(_ request: HostileReceiver.Request) -> HostileReceiver.Answer? {
        if request.method == "OPTIONS" { return .respond(status: 200, headers: [("Upload-Limit", "max-size=1000000000")]) }
        if request.path.contains("/objects/by-digest/") { return .respond(status: 404, headers: []) }
        return nil
    }

    /// How many photos the store marks uploaded (`status --json`).
    static func uploadedCount(_ ws: Workspace) throws -> Int {
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status.stdout)")
        let counts = try #require(report["counts"] as? [String: Any])
        return try #require(counts["uploaded"] as? Int)
    }

    // MARK: The token and the bytes stay on the destination's origin

    /// The other origin: it takes any append and claims to hold what the client says it sent,
    /// so a client that followed the Location there would mark the photo uploaded.
    static func otherOrigin() throws -> HostileReceiver {
        try HostileReceiver { request in
            let end = (Int(request.headers["upload-offset"] ?? "") ?? 0) + request.contentLength
            return .respond(status: 204, headers: [("Upload-Complete", "?1"), ("Upload-Offset", String(end)),
                                                   ("Repr-Digest", request.headers["repr-digest"] ?? ""),
                                                   ("X-Server-Resource-ID", "obj-elsewhere")])
        }
    }

    /// A receiver that answers the creation with an upload URL on another origin.
    static func crossOriginReceiver(other: HostileReceiver) throws -> HostileReceiver {
        try HostileReceiver { request in
            if let basic = receiverBasics(request) { return basic }
            return .respond(status: 201, headers: [("Location", "\(other.origin)/uploads/1"), ("Upload-Complete", "?0"),
                                                   ("Upload-Offset", "0")])
        }
    }

    @Test func uploadRefusesAnUploadURLOnAnotherOrigin() throws {
        let other = try Self.otherOrigin()
        let receiver = try Self.crossOriginReceiver(other: other)
        defer { receiver.stop(); other.stop() }
        let run = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", "\(receiver.origin)/uploads"])
        #expect(run.status == 1, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("not-a-receiver"), "\(run.stdout)")
        #expect(run.stdout.contains(receiver.origin) && run.stdout.contains(other.origin), "both origins named: \(run.stdout)")
        #expect(!run.stdout.contains("uploaded as"))
        #expect(other.connectionsAccepted == 0, "the other origin was contacted")
        #expect(receiver.requests.allSatisfy { $0.method != "PATCH" })
    }

    @Test func drainRefusesAnUploadURLOnAnotherOriginAndMarksNothing() throws {
        let ws = try Workspace()
        try ws.addGrayPhoto("gray.jpg", width: 160, height: 120)
        let other = try Self.otherOrigin()
        let receiver = try Self.crossOriginReceiver(other: other)
        defer { receiver.stop(); other.stop() }
        let run = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", "\(receiver.origin)/uploads"] + Self.fast)
        #expect(run.status != 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stderr.contains(receiver.origin) && run.stderr.contains(other.origin), "both origins named: \(run.stderr)")
        #expect(run.stderr.contains("No photo was charged an attempt"), "\(run.stderr)")
        #expect(other.connectionsAccepted == 0, "the other origin was contacted")
        #expect(try Self.uploadedCount(ws) == 0)
    }

    // MARK: Nothing a server sends reaches the terminal raw

    @Test func aServerIDThatDrivesTheTerminalIsPrintedEscaped() throws {
        let receiver = try HostileReceiver { request in
            if let basic = Self.receiverBasics(request) { return basic }
            // Completes the upload, naming the digest the client sent and a hostile id.
            return .respond(status: 201, headers: [
                ("Upload-Complete", "?1"), ("Upload-Offset", String(request.contentLength)), ("Location", "/uploads/1"),
                ("Repr-Digest", request.headers["repr-digest"] ?? ""), ("X-Server-Resource-ID", Self.terminalAttack),
            ])
        }
        defer { receiver.stop() }
        for json in [false, true] {
            let run = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", "\(receiver.origin)/uploads"] + (json ? ["--json"] : []))
            #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
            let output = run.stdout + run.stderr
            #expect(!output.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) },
                    "a control character reached the terminal: \(run.stdout.debugDescription)")
            if json {
                // The JSON still holds the server's id itself.
                let row = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
                #expect(row["serverID"] as? String == Self.terminalAttack)
            } else {
                #expect(run.stdout.contains("uploaded as \\x1b]0;owned\\x07\\x1b[2J\\u{9b}2J\\x7f"), "\(run.stdout)")
            }
        }
    }

    // MARK: The pre-check comes after discovery

    /// A server that does not speak the protocol (no Upload-Limit) but answers every digest
    /// lookup 200 with the asked digest and an id.
    static func lookupOnlyServer() throws -> HostileReceiver {
        try HostileReceiver { request in
            if request.method == "OPTIONS" { return .respond(status: 200, headers: []) }
            let prefix = "/objects/by-digest/"
            if let range = request.path.range(of: prefix) {
                let hex = String(request.path[range.upperBound...])
                var digest = [UInt8]()
                var index = hex.startIndex
                while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
                      let byte = UInt8(hex[index..<next], radix: 16) {
                    digest.append(byte)
                    index = next
                }
                return .respond(status: 200, headers: [("X-Server-Resource-ID", "obj-\(hex.prefix(8))"),
                                                       ("Repr-Digest", "sha-256=:\(Data(digest).base64EncodedString()):")])
            }
            return .respond(status: 201, headers: [])
        }
    }

    @Test func uploadTakesNoDigestLookupFromAServerThatIsNotAReceiver() throws {
        let server = try Self.lookupOnlyServer()
        defer { server.stop() }
        let run = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", "\(server.origin)/uploads"])
        #expect(run.status != 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("does not speak the resumable-upload protocol"), "\(run.stdout)")
        #expect(!run.stdout.contains("already on the server"))
        #expect(!server.requests.contains { $0.path.contains("by-digest") }, "the lookup was asked before discovery")
    }

    @Test func drainMarksNothingFromADigestLookupOfAServerThatIsNotAReceiver() throws {
        let ws = try Workspace()
        try ws.addGrayPhoto("gray.jpg", width: 160, height: 120)
        let server = try Self.lookupOnlyServer()
        defer { server.stop() }
        let run = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", "\(server.origin)/uploads"] + Self.fast)
        #expect(run.status != 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stderr.contains("does not speak the resumable-upload protocol"), "\(run.stderr)")
        #expect(!run.stdout.contains("already on the server"), "\(run.stdout)")
        #expect(try Self.uploadedCount(ws) == 0)
    }

    // MARK: The article's forms

    /// `Upload-Limit: 107374182400` and a 104 with only `Location`; the creation's connection
    /// closes after the body without an answer, so the upload is finished at the 104's URL.
    @Test func aReceiverWrittenFromTheArticleGetsTheUpload() throws {
        let digest = Mutex<(String, Int)?>(nil)
        let receiver = try HostileReceiver { request in
            switch request.method {
            case "OPTIONS": return .respond(status: 200, headers: [("Upload-Limit", "107374182400")])
            case "POST":
                digest.withLock { $0 = (request.headers["repr-digest"] ?? "", request.contentLength) }
                return .closeAfterBody(interim: ["HTTP/1.1 104 Upload Resumption Supported\r\nLocation: /uploads/1\r\n\r\n"])
            case "HEAD" where request.path == "/uploads/1":
                guard let (field, length) = digest.withLock({ $0 }) else { return .respond(status: 404, headers: []) }
                return .respond(status: 204, headers: [("Upload-Offset", String(length)), ("Upload-Complete", "?1"),
                                                       ("Repr-Digest", field), ("X-Server-Resource-ID", "obj-article")])
            default: return .respond(status: 404, headers: [])
            }
        }
        defer { receiver.stop() }
        let run = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", "\(receiver.origin)/uploads"])
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("uploaded as obj-article (resumable"), "\(run.stdout)")
        #expect(receiver.requests.map(\.method).suffix(2) == ["POST", "HEAD"])
    }
}

/// A receiver for one test: HTTP/1.1 on a loopback port, one thread per connection, keep-alive;
/// every request is answered as `answer` says from its head (before its body is read). It records
/// the requests and counts the connections, so a test can show a listener was never contacted.
/// Its threads hold it: `stop()` it when the test ends.
final class HostileReceiver: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        /// Names lowercased.
        var headers: [String: String]
        var contentLength: Int { Int(headers["content-length"] ?? "") ?? 0 }
    }

    enum Answer: Sendable {
        /// Writes the interim responses (whole, each ending in an empty line), a `100 Continue`
        /// if the client waits for it, reads the body, then answers with the status and headers.
        case respond(interim: [String] = [], status: Int, headers: [(String, String)])
        /// Writes the interim responses, reads the body, and closes without an answer.
        case closeAfterBody(interim: [String])
    }

    private struct State {
        var requests: [Request] = []
        var connectionsAccepted = 0
        var open: Set<Int32> = []
        var stopped = false
    }

    let port: UInt16
    var origin: String { "http://127.0.0.1:\(port)" }
    private let listener: Int32
    private let answer: @Sendable (Request) -> Answer
    private let state = Mutex(State())

    /// Listens on `port` (0: one the system picks; another: a receiver that stopped, taken over).
    init(port: UInt16 = 0, answer: @escaping @Sendable (Request) -> Answer) throws {
        guard let (listener, port) = LoopbackSocket.listen(port: port) else { throw CLIFixtureError("no loopback socket") }
        self.listener = listener
        self.port = port
        self.answer = answer
        Thread { [self] in acceptLoop() }.start()
    }

    var requests: [Request] { state.withLock { $0.requests } }
    var connectionsAccepted: Int { state.withLock { $0.connectionsAccepted } }

    /// Stops accepting and ends every open connection.
    func stop() {
        let open = state.withLock { state in
            state.stopped = true
            return state.open
        }
        LoopbackSocket.shutdownBoth(listener)
        for fd in open { LoopbackSocket.shutdownBoth(fd) }
    }

    private func acceptLoop() {
        while let connection = LoopbackSocket.accept(listener) {
            let accepted = state.withLock { state in
                guard !state.stopped else { return false }
                state.connectionsAccepted += 1
                state.open.insert(connection)
                return true
            }
            guard accepted else {
                LoopbackSocket.close(connection)
                break
            }
            LoopbackSocket.setReadTimeout(connection, seconds: 30)
            Thread { [self] in serve(connection) }.start()
        }
        LoopbackSocket.close(listener)
    }

    private func serve(_ fd: Int32) {
        defer {
            state.withLock { _ = $0.open.remove(fd) }
            LoopbackSocket.close(fd)
        }
        var buffer: [UInt8] = []
        while let request = readHead(fd, buffer: &buffer) {
            state.withLock { $0.requests.append(request) }
            let reply = answer(request)
            let interim: [String]
            switch reply {
            case .respond(let sent, _, _), .closeAfterBody(let sent): interim = sent
            }
            for response in interim where !LoopbackSocket.writeAll(fd, Array(response.utf8)) { return }
            if request.headers["expect"]?.lowercased() == "100-continue",
               !LoopbackSocket.writeAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) { return }
            guard skipBody(fd, length: request.contentLength, buffer: &buffer) else { return }
            guard case .respond(_, let status, let headers) = reply else { return }
            var text = "HTTP/1.1 \(status) Status\r\n"
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            if status != 204 && request.method != "HEAD" { text += "Content-Length: 0\r\n" }
            text += "\r\n"
            guard LoopbackSocket.writeAll(fd, Array(text.utf8)) else { return }
        }
    }

    /// The next request's head; nil when the connection ends first.
    private func readHead(_ fd: Int32, buffer: inout [UInt8]) -> Request? {
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let range = buffer.firstRange(of: end) {
                let head = String(decoding: buffer[..<range.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<range.upperBound)
                let lines = head.components(separatedBy: "\r\n")
                let parts = lines.first?.split(separator: " ") ?? []
                guard parts.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                return Request(method: String(parts[0]), path: String(parts[1]), headers: headers)
            }
            guard read(fd, into: &buffer) else { return nil }
        }
    }

    /// Reads and drops `length` body bytes; false when the connection ends first.
    private func skipBody(_ fd: Int32, length: Int, buffer: inout [UInt8]) -> Bool {
        var remaining = length
        while true {
            let taken = min(remaining, buffer.count)
            buffer.removeFirst(taken)
            remaining -= taken
            if remaining == 0 { return true }
            guard read(fd, into: &buffer) else { return false }
        }
    }

    private func read(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let n = chunk.withUnsafeMutableBytes { LoopbackSocket.read(fd, into: $0) }
        guard n > 0 else { return false }
        buffer += chunk[..<n]
        return true
    }
}
