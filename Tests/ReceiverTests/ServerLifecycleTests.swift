import Foundation
import Receiver
import Testing
import UploadProtocol

/// Starting, stopping, configuration, and recovery of the store at start.
@Suite struct ServerLifecycleTests {
    @Test func loopbackServerReportsItsURL() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try ReceiverServer.startLoopback(directory: directory)
        defer { server.stop() }
        let port = try #require(server.port)
        #expect(port > 0)
        #expect(server.uploadURL == "http://127.0.0.1:\(port)/uploads")
        #expect(try RawHTTPClient(port: port).request("GET", "/healthz").status == 200)
        #expect(throws: ReceiverError.self) { try server.start() }
        let body = TestReceiver.bytes(3_000)
        let stored = try RawHTTPClient(port: port).request("PUT", "/uploads", body: body)
        let id = try #require(stored["x-server-resource-id"])
        #expect(try server.storedObjects().map(\.id) == [id])
        let path = try #require(server.contentPath(ofObject: id))
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path))) == body)
        #expect(server.contentPath(ofObject: "../../etc/passwd") == nil)
    }

    @Test func stopEndsIdleConnectionsAndIsIdempotent() throws {
        let receiver = try TestReceiver()
        defer { receiver.removeDirectory() }
        let idle = try receiver.client()
        #expect(try idle.request("GET", "/healthz").status == 200)
        receiver.stop()
        #expect(idle.isClosedByServer())
        receiver.stop()
        #expect(throws: RawHTTPClient.ClientError.self) { try receiver.client() }
    }

    @Test(arguments: [
        ("", 8080, "the storage directory is empty"),
        ("/tmp/x", 70_000, "port 70000 is outside 0...65535"),
    ])
    func invalidConfigurationIsRefused(directory: String, port: Int, message: String) {
        let server = ReceiverServer(configuration: ReceiverConfiguration(directory: directory, port: port))
        #expect(throws: ReceiverError(code: .invalidConfiguration, message: message)) { try server.start() }
    }

    @Test func unparseableHostIsRefusedBeforeAnythingIsWritten() {
        let parent = TestReceiver.makeTemporaryDirectory()
        let directory = parent + "/store"
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let server = ReceiverServer(configuration: ReceiverConfiguration(directory: directory, host: "not a host", port: 0))
        #expect { try server.start() } throws: { ($0 as? ReceiverError)?.code == .invalidConfiguration }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test func tokenFileIsTrimmedAndMissingFilesAreNamed() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/token"
        try Data("  abc123\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try ReceiverConfiguration.token(fromFile: path) == "abc123")
        try Data("\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect { try ReceiverConfiguration.token(fromFile: path) } throws: {
            ($0 as? ReceiverError)?.code == .invalidConfiguration
        }
        #expect { try ReceiverConfiguration.token(fromFile: directory + "/missing") } throws: {
            ($0 as? ReceiverError)?.message.contains("missing") == true
        }
    }

    /// A token with a space or a control character inside is one no client sends
    /// (`BearerTokenText`), so a receiver holding it would refuse every upload: refused at start,
    /// the file named and the token never shown.
    @Test(arguments: ["tok3n-value more\n", "tok3n-value\tmore", "tok3n-value\r\nmore\n", "tok3n-value\u{7F}", " tok3n-value\u{0}more "])
    func aTokenNoClientSendsIsRefused(content: String) throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/token"
        try Data(content.utf8).write(to: URL(fileURLWithPath: path))
        #expect { try ReceiverConfiguration.token(fromFile: path) } throws: { error in
            guard let error = error as? ReceiverError else { return false }
            return error.code == .invalidConfiguration && error.message.contains(path) && !error.message.contains("tok3n-value")
        }
        let server = ReceiverServer(configuration: .loopback(directory: directory + "/store", token: content))
        defer { server.stop() }
        #expect { try server.start() } throws: { ($0 as? ReceiverError)?.code == .invalidConfiguration }
        #expect(!FileManager.default.fileExists(atPath: directory + "/store"))
    }

    @Test func startRecoversFromACrash() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(30_000, seed: 8)
        let bootFile = directory + "-boot_id"
        defer { try? FileManager.default.removeItem(atPath: bootFile) }
        try "before-the-crash".write(toFile: bootFile, atomically: true, encoding: .utf8)
        // Every piece written is checkpointed, so the record's durable offset is 10,000.
        let configure: (inout ReceiverConfiguration) -> Void = { $0.bootIDPath = bootFile; $0.checkpointInterval = 0 }
        let path: String
        do {
            let first = try TestReceiver(directory: directory, configure: configure)
            defer { first.stop() }
            path = try first.createPartialUpload(body[0..<10_000], version: 8)
        }
        // What a machine crash can leave: bytes past the last checkpoint that may be garbage on
        // disk, a staging file, an object whose sidecar was never written.
        let id = String(path.dropFirst("/uploads/".count))
        let part = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/uploads/\(id).part"))
        try part.seekToEnd()
        try part.write(contentsOf: Data(repeating: 0xEE, count: 4_096))
        try part.close()
        try Data("stale".utf8).write(to: URL(fileURLWithPath: directory + "/tmp/0123.upload"))
        let orphan = "0123456789abcdef0123456789abcdef"
        try Data("orphan".utf8).write(to: URL(fileURLWithPath: directory + "/objects/" + orphan))

        try "after-the-reboot".write(toFile: bootFile, atomically: true, encoding: .utf8)
        let second = try TestReceiver(directory: directory, configure: configure)
        defer { second.stop() }
        #expect(second.files(in: "tmp").isEmpty)
        #expect(second.files(in: "objects").isEmpty)
        let probe = try second.client().request("HEAD", path)
        #expect(probe["upload-offset"] == "10000")
        try second.completeUpload(path, body: body, from: 10_000, version: 8)
    }
}
