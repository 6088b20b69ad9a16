import FaultProxy
import Foundation
import Synchronization
import Testing

/// `photodrain upload` killed part-way through a large file resumes in the next
/// run from the receiver's offset instead of opening a new upload and sending every byte again.
@Suite(.serialized) struct UploadResumeCLITests {
    /// Whether the proxy slows new connections down, so the first run is still sending when it is killed.
    final class Throttle: Sendable {
        let on = Mutex(true)
    }

    /// A `photodrain serve` behind a proxy, and a 40 MB file whose `upload` was killed (SIGKILL)
    /// once the receiver held 60% of it, its checkpoint saved in `environment`'s state folder.
    final class KilledUpload {
        let ws: Workspace
        let storage: String
        let server: ServeProcess
        let proxy: FaultProxy
        /// The URL both runs name: the saved upload belongs to the destination as the user names it.
        let destination: String
        let environment: [String: String]
        let records: String
        let size = 40_000_000
        let file: String
        let content: Data
        /// What the receiver held when the run was killed.
        private(set) var held = 0
        /// The proxy's upstream count once the killed run's bytes were through.
        private(set) var forwardedBefore = 0

        init() throws {
            ws = try Workspace()
            storage = ws.root.appendingPathComponent("received").path
            server = try ServeProcess(directory: storage)
            let serverPort = try #require(URL(string: server.url)?.port.flatMap { UInt16(exactly: $0) })
            // The first run's bytes pass slowly (a pause before each chunk forwarded), later runs' at full speed.
            let throttle = Throttle()
            proxy = try FaultProxy(targetPort: serverPort, plan: FaultPlan { _ in
                throttle.on.withLock { $0 } ? .delay(milliseconds: 4) : nil
            })
            destination = "http://127.0.0.1:\(proxy.port)/uploads"
            environment = ["XDG_STATE_HOME": ws.root.appendingPathComponent("state").path]
            records = ws.root.appendingPathComponent("state/photodrain/uploads").path
            file = ws.root.appendingPathComponent("video.mov").path
            content = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom")).readData(ofLength: size)
            try content.write(to: URL(fileURLWithPath: file))

            let first = try Running(["upload", file, "--to", destination, "--json"], environment: environment)
            let deadline = Date().addingTimeInterval(30)
            while held < size * 6 / 10 && first.process.isRunning && Date() < deadline {
                usleep(20_000)
                held = UploadResumeCLITests.partialBytes(in: storage + "/uploads")
            }
            first.signal(SIGKILL)
            #expect(first.wait() == 128 + SIGKILL, "the first run ended before it was killed: \(first.stdout) \(first.stderr)")
            #expect(held >= size * 6 / 10, "the receiver held only \(held) bytes after 30 s")
            #expect(UploadResumeCLITests.jsonFiles(in: records).count == 1, "the killed run saved no checkpoint")

            // The killed run's socket buffers still hold bytes the proxy passes on, slowly: wait
            // until they are through, so the proxy's count is the next run's alone.
            forwardedBefore = proxy.bytesForwarded(.upstream)
            let drained = Date().addingTimeInterval(20)
            repeat {
                usleep(500_000)
                let now = proxy.bytesForwarded(.upstream)
                if now == forwardedBefore { break }
                forwardedBefore = now
            } while Date() < drained
            throttle.on.withLock { $0 = false }
        }

        deinit { proxy.stop() }

        /// The receiver's log lines so far.
        var log: [Substring] { server.running.stderr.split(separator: "\n") }
    }

    @Test func aKilledUploadResumesInTheNextRun() throws {
        let killed = try KilledUpload()
        let (size, held, file, destination, environment) = (killed.size, killed.held, killed.file, killed.destination, killed.environment)
        let started = Date()
        let second = try CLI.run(["upload", file, "--to", destination, "--json"], environment: environment)
        #expect(second.status == 0, "stdout: \(second.stdout) stderr: \(second.stderr)")
        #expect(Date().timeIntervalSince(started) < 30)
        let row = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        let resumedFrom = try #require(row["resumedFrom"] as? Int, "not resumed: \(row)")
        let sent = try #require(row["bytes"] as? Int)
        #expect(resumedFrom >= held && resumedFrom < size, "held \(held) at the kill, resumed from \(resumedFrom)")
        #expect(sent == size - resumedFrom, "\(row)")
        #expect(sent < size / 2)
        #expect(row["confirmedBytes"] as? Int == size)
        #expect(row["resentBytes"] as? Int == 0)
        // The wire agrees: request heads aside, only the missing bytes went through the proxy.
        let forwarded = killed.proxy.bytesForwarded(.upstream) - killed.forwardedBefore
        #expect(forwarded >= size - resumedFrom && forwarded < size - resumedFrom + 64 * 1024, "\(forwarded) bytes forwarded")

        // The receiver's log: one upload created, by the first run; the second appended to it.
        let log = killed.log
        let creations = log.filter { $0.hasPrefix("POST /uploads ") }
        #expect(creations.count == 1, "\(log)")
        let upload = try #require(creations.first?.split(separator: " ").first { $0.hasPrefix("upload=") })
        #expect(log.contains { $0.hasPrefix("PATCH ") && $0.contains(upload) && $0.contains("object=") }, "\(log)")

        // The object is the file, byte for byte, and nothing is left over.
        let objects = try killed.server.objects()
        #expect(objects.count == 1)
        #expect(objects.first?["sha256"] as? String == (try Self.sha256(of: file)))
        let id = try #require(objects.first?["id"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: killed.storage + "/objects/" + id)) == killed.content)
        #expect(Self.jsonFiles(in: killed.records).isEmpty, "the finished upload's checkpoint was kept")
        #expect(Self.partialBytes(in: killed.storage + "/uploads") == 0)
    }

    /// The file changed after the killed run: its bytes on the receiver are another version's, so
    /// the next run cancels that upload (DELETE) and sends the new version from the start.
    @Test func aFileChangedSinceStartsOverAndCancelsTheOldUpload() throws {
        let killed = try KilledUpload()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: killed.file))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("edited".utf8))
        try handle.close()

        let second = try CLI.run(["upload", killed.file, "--to", killed.destination, "--json"], environment: killed.environment)
        #expect(second.status == 0, "stdout: \(second.stdout) stderr: \(second.stderr)")
        let row = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        #expect(row["resumedFrom"] == nil, "\(row)")
        #expect(row["bytes"] as? Int == killed.size + 6)
        let log = killed.log
        let creations = log.filter { $0.hasPrefix("POST /uploads ") }
        #expect(creations.count == 2, "\(log)")
        let old = try #require(creations.first?.split(separator: " ").first { $0.hasPrefix("upload=") }.map { $0.dropFirst(7) })
        #expect(log.contains { $0.hasPrefix("DELETE /uploads/\(old) 2") }, "the old upload was not cancelled: \(log)")
        #expect(try killed.server.objects().first?["sha256"] as? String == (try Self.sha256(of: killed.file)))
        #expect(Self.jsonFiles(in: killed.records).isEmpty)
        #expect(Self.partialBytes(in: killed.storage + "/uploads") == 0)
    }

    /// A state folder that cannot be written is no reason to fail: one warning, and the file goes.
    @Test func anUnwritableStateFolderOnlyWarns() throws {
        let ws = try Workspace()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let blocker = ws.root.appendingPathComponent("state").path
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data("not a folder".utf8)))
        let result = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", server.url], environment: ["XDG_STATE_HOME": blocker])
        #expect(result.status == 0, "stdout: \(result.stdout) stderr: \(result.stderr)")
        #expect(result.stderr.contains("will not resume"))
        #expect(result.stdout.contains("confirmed"))
        #expect(try server.objects().count == 1)
    }

    /// The bytes of the `.part` files in a receiver's upload folder.
    static func partialBytes(in folder: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".part") }.reduce(0) { total, name in
            total + (((try? FileManager.default.attributesOfItem(atPath: folder + "/" + name))?[.size] as? NSNumber)?.intValue ?? 0)
        }
    }

    static func jsonFiles(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".json") }
    }

    /// The file's SHA-256 as `sha256sum` prints it.
    private static func sha256(of path: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: data, as: UTF8.self).prefix(64))
    }
}
