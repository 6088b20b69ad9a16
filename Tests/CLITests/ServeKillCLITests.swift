import Foundation
import Testing

/// `photodrain serve` killed with SIGKILL in the middle of an append, long before its next
/// checkpoint: the restarted receiver reports every byte the killed one wrote (the page cache
/// outlives the process), accepts the rest from there, and stores a byte-identical object.
@Suite(.serialized) struct ServeKillCLITests {
    @Test func killedReceiverResumesFromEveryWrittenByte() throws {
        let ws = try Workspace()
        let storage = ws.root.appendingPathComponent("received").path
        let size = 4_000_000
        let content = [UInt8](try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom")).readData(ofLength: size))
        let file = ws.root.appendingPathComponent("video.bin").path
        try Data(content).write(to: URL(fileURLWithPath: file))
        let version = ["-H", "Upload-Draft-Interop-Version: 8"]

        let first = try ServeProcess(directory: storage, extra: ["--checkpoint-interval", "3600"])
        let created = try Self.curl(["-s", "-i", "-X", "POST", "--data-binary", "", "-H", "Upload-Complete: ?0"] + version + [first.url])
        let location = try #require(created.split(separator: "\r\n").last { $0.lowercased().hasPrefix("location:") })
        let id = try #require(location.split(separator: "/").last.map { String($0).trimmingCharacters(in: .whitespaces) })
        let part = storage + "/uploads/\(id).part"

        // A slow append, so the receiver is mid-body when it is killed.
        let append = Process()
        append.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        append.arguments = ["-s", "-o", "/dev/null", "--limit-rate", "400K", "-X", "PATCH", "-H", "Expect:", "--data-binary", "@" + file,
                            "-H", "Upload-Offset: 0", "-H", "Upload-Complete: ?1", "-H", "Content-Type: application/partial-upload"]
            + version + [first.url + "/\(id)"]
        try append.run()
        defer { if append.isRunning { append.terminate() } }
        let deadline = Date().addingTimeInterval(60)
        while Self.size(of: part) < 1_000_000 && Date() < deadline { usleep(20_000) }
        #expect(Self.size(of: part) >= 1_000_000)
        first.running.signal(SIGKILL)
        #expect(first.running.wait() == 128 + SIGKILL)
        append.waitUntilExit()

        // Nothing was checkpointed: the record still promises only what creation made durable.
        let record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: storage + "/uploads/\(id).json")))
        #expect((record as? [String: Any])?["offset"] as? Int == 0)
        let written = Self.size(of: part)
        #expect(written >= 1_000_000 && written < size)

        let second = try ServeProcess(directory: storage)
        let probe = try Self.curl(["-s", "-I"] + version + [second.url + "/\(id)"])
        #expect(probe.lowercased().contains("upload-offset: \(written)\r\n"), "\(probe)")
        let rest = ws.root.appendingPathComponent("rest.bin").path
        try Data(content[written...]).write(to: URL(fileURLWithPath: rest))
        let finished = try Self.curl(["-s", "-i", "-X", "PATCH", "-H", "Expect:", "--data-binary", "@" + rest, "-H", "Upload-Offset: \(written)",
                                      "-H", "Upload-Complete: ?1", "-H", "Content-Type: application/partial-upload"]
                                     + version + [second.url + "/\(id)"])
        #expect(finished.hasPrefix("HTTP/1.1 201"), "\(finished)")
        let objectLine = try #require(finished.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-server-resource-id:") })
        let objectID = try #require(objectLine.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) })
        let stored = try Data(contentsOf: URL(fileURLWithPath: storage + "/objects/\(objectID)"))
        #expect(stored == Data(content))
    }

    private static func size(of path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// Runs curl and returns what it printed.
    private static func curl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["--max-time", "30"] + arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
