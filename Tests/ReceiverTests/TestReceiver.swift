import Foundation
import Receiver
import Synchronization
import Testing
import UploadProtocol

/// A receiver on an ephemeral loopback port over a fresh temporary directory, for one test.
/// `stop()` ends it; `removeDirectory()` deletes the directory.
final class TestReceiver: Sendable {
    let server: ReceiverServer
    let port: Int
    let directory: String
    let log = LogSink()
    /// The receiver's clock (tests move it forward to expire uploads).
    let clock: ManualClock

    /// Collects the receiver's log lines.
    final class LogSink: Sendable {
        private let stored = Mutex<[String]>([])
        func append(_ line: String) { stored.withLock { $0.append(line) } }
        var lines: [String] { stored.withLock { $0 } }
    }

    /// A clock that only moves when told to.
    final class ManualClock: Sendable {
        private let current = Mutex(Date(timeIntervalSince1970: 1_900_000_000))
        func now() -> Date { current.withLock { $0 } }
        func advance(by seconds: Double) { current.withLock { $0 += seconds } }
    }

    init(directory: String? = nil, clock: ManualClock = ManualClock(),
         configure: (inout ReceiverConfiguration) -> Void = { _ in }) throws {
        let dir = directory ?? Self.makeTemporaryDirectory()
        self.directory = dir
        self.clock = clock
        var configuration = ReceiverConfiguration.loopback(directory: dir)
        let log = log
        configuration.log = { line in log.append(line) }
        configuration.now = { clock.now() }
        configure(&configuration)
        server = ReceiverServer(configuration: configuration)
        port = try server.start()
    }

    /// A client connected from 127.0.0.1, or from another loopback address (`source`) to be
    /// another peer.
    func client(from source: String? = nil) throws -> RawHTTPClient { try RawHTTPClient(port: port, from: source) }

    /// Creates an upload that is not complete, holding `bytes` (interop `version`), and returns its
    /// path (`/uploads/ID`); throws when the answer has no usable Location.
    func createPartialUpload(_ bytes: ArraySlice<UInt8>, version: Int, extra: [(String, String)] = []) throws -> String {
        let created = try client().request("POST", "/uploads",
                                           headers: ResumableUploadTests.creationHeaders(version: version, complete: false, extra: extra),
                                           body: Array(bytes))
        return try ResumableUploadTests.path(of: created["location"])
    }

    func stop() { server.stop() }

    func removeDirectory() { try? FileManager.default.removeItem(atPath: directory) }

    /// Files under `sub` of the storage directory.
    func files(in sub: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/" + sub)) ?? []).sorted()
    }

    /// Every object the receiver lists.
    func objects() throws -> [StoredObject] {
        let response = try client().request("GET", "/objects", headers: authorization)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode([StoredObject].self, from: Data(response.body))
    }

    /// An object's bytes as the receiver serves them.
    func content(of id: String) throws -> [UInt8] {
        try client().request("GET", "/objects/\(id)/content", headers: authorization).body
    }

    /// Sends the rest of `body` from `offset` in a completing PATCH (interop `version`) to the
    /// upload at `path`, and checks that the receiver answers 201 and stores `body` byte for byte.
    func completeUpload(_ path: String, body: [UInt8], from offset: Int, version: Int,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        let rest = try client().request("PATCH", path,
                                        headers: ResumableUploadTests.patchHeaders(version: version, offset: offset, complete: true),
                                        body: Array(body[offset...]))
        #expect(rest.status == 201, sourceLocation: sourceLocation)
        let id = try #require(rest["x-server-resource-id"], sourceLocation: sourceLocation)
        #expect(try content(of: id) == body, sourceLocation: sourceLocation)
    }

    /// Headers that authorise requests when the receiver has a token.
    var authorization: [(String, String)] {
        server.configuration.token.map { [("Authorization", "Bearer \($0)")] } ?? []
    }

    static func makeTemporaryDirectory() -> String {
        var template = Array((FileManager.default.temporaryDirectory.path + "/receiver-test-XXXXXX").utf8CString)
        let path = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }
        guard let path else { return NSTemporaryDirectory() + "/receiver-test-" + UUID().uuidString }
        return String(cString: path)
    }

    /// Deterministic pseudo-random bytes.
    static func bytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }
}
