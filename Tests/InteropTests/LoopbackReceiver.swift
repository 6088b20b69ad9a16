import Foundation
import Receiver
import Synchronization

/// A real `ReceiverServer` on an ephemeral loopback port over a fresh temporary directory, for one
/// test. It can be restarted on the same port and directory (a new server, as after a crash or a
/// redeploy), and it keeps every log line so tests can read the statuses it answered.
final class LoopbackReceiver {
    /// Why a receiver could not be set up.
    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    /// One request as the receiver logged it.
    struct LoggedRequest: Equatable {
        var method: String
        var path: String
        var status: String
    }

    let directory: String
    let log = LogLines()
    private(set) var server: ReceiverServer
    private(set) var port: Int

    /// Starts a receiver; `configure` may set a token, limits or fault injection.
    init(configure: (inout ReceiverConfiguration) -> Void = { _ in }) throws {
        directory = try Self.makeTemporaryDirectory()
        (server, port) = try Self.start(directory: directory, port: 0, log: log, configure: configure)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The upload target, e.g. `http://127.0.0.1:41234/uploads`.
    var uploadURL: String { "http://127.0.0.1:\(port)/uploads" }

    /// Stops the server (connections in flight are ended; their durable prefix stays).
    func stop() { server.stop() }

    /// Stops the server and starts a new one on the same port and directory.
    func restart(configure: (inout ReceiverConfiguration) -> Void = { _ in }) throws {
        server.stop()
        (server, port) = try Self.start(directory: directory, port: port, log: log, configure: configure)
    }

    /// Every object stored, read through the server's own listing.
    func objects() throws -> [StoredObject] { try server.storedObjects() }

    /// The names in the `objects/` directory that hold bytes (not sidecars).
    func objectFilesOnDisk() -> [String] {
        files(in: "objects").filter { !$0.hasSuffix(".json") }
    }

    /// The sizes of the partial uploads on disk (`uploads/*.part`).
    func partialUploadSizes() -> [Int64] {
        files(in: "uploads").filter { $0.hasSuffix(".part") }.compactMap { name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/uploads/" + name)
            return (attributes?[.size] as? NSNumber)?.int64Value
        }
    }

    /// The requests the receiver answered, in order (from its log lines).
    var requests: [LoggedRequest] {
        log.lines.compactMap { line in
            let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
            guard words.count >= 3, let first = words.first, first.allSatisfy({ $0.isUppercase }) else { return nil }
            return LoggedRequest(method: String(words[0]), path: String(words[1]), status: String(words[2]))
        }
    }

    /// Whether the stored object `id` holds exactly the bytes of `file` (false for an unknown id).
    func holds(object id: String?, identicalTo file: TestFile) throws -> Bool {
        guard let id, let path = server.contentPath(ofObject: id) else { return false }
        return try file.hasSameBytes(as: path)
    }

    private func files(in sub: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/" + sub)) ?? []).sorted()
    }

    private static func start(directory: String, port: Int, log: LogLines,
                              configure: (inout ReceiverConfiguration) -> Void) throws -> (ReceiverServer, Int) {
        var configuration = ReceiverConfiguration.loopback(directory: directory, log: { log.append($0) })
        configuration.port = port
        configure(&configuration)
        let server = ReceiverServer(configuration: configuration)
        return (server, try server.start())
    }

    private static func makeTemporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/photodrain-interop-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// Log lines collected from any thread.
final class LogLines: Sendable {
    private let stored = Mutex<[String]>([])

    func append(_ line: String) { stored.withLock { $0.append(line) } }

    var lines: [String] { stored.withLock { $0 } }
}
