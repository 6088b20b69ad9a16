import FaultProxy
import Foundation
import Synchronization
import Testing

/// Photos copied in while `drain` runs are uploaded by the same run;
/// a receiver's `Retry-After` is waited for, up to `--retry-after-limit`, and a longer ask stops
/// the drain with exit 75 and charges nothing.
@Suite(.serialized) struct DrainRescanCLITests {
    /// A library of the full-size samples: slow enough (a few seconds with one slot) that a photo
    /// can be copied in while the drain works.
    private static func fullSizeLibrary(_ ws: Workspace) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: CLI.repository.appendingPathComponent("SampleImages").path)
            .filter { $0.hasSuffix(".jpg") || $0.hasSuffix(".png") }.sorted()
        for name in names {
            try ws.write("photos/\(name)", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample(name)))))
        }
        return names
    }

    private static func statusJSON(_ ws: Workspace) throws -> [String: Any] {
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        return try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
    }

    @Test func aPhotoCopiedInMidDrainIsUploadedBeforeDrainExits() throws {
        let ws = try Workspace()
        let photos = try Self.fullSizeLibrary(ws)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try Running(["drain", ws.library, "--store", ws.store, "--to", server.url, "--slots", "1",
                                 "--rescan-interval", "1", "--json"] + DrainCLITests.fast)
        #expect(drain.waitForOutput(containing: "\"event\":\"uploaded\""), "stderr: \(drain.stderr)")
        // Copied in as a copier does it: written under another name outside the library, then
        // renamed into a new folder. Its bytes are new (a sample with a byte more after its end).
        var late = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("rocket.jpg"))))
        late.append(0)
        let staging = ws.root.appendingPathComponent("incoming.jpg")
        try Data(late).write(to: staging)
        try FileManager.default.createDirectory(atPath: ws.path("later"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: staging.path, toPath: ws.path("later/rocket.jpg"))
        let copiedWhileRunning = drain.process.isRunning
        let status = drain.wait()
        #expect(copiedWhileRunning, "the drain finished before the photo was copied in; the library is too small to test this")
        #expect(status == 0, "stderr: \(drain.stderr)")
        #expect(drain.stdout.contains("\"event\":\"rescanned\""))
        #expect(drain.stdout.contains("\"path\":\"later/rocket.jpg\""))
        try DrainCLITests.expectOneIntactObjectPerPhoto(server, ws, photos: photos + ["later/rocket.jpg"])
    }

    /// The receiver (behind a proxy) answers 503 with Retry-After: 1 until the drain has seen it;
    /// the drain waits the second, tries again, and finishes with every photo sent.
    @Test func aRetryAfterWithinTheLimitIsWaitedFor() throws {
        let ws = try Workspace()
        try ws.write("one.jpg", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg")))))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let port = try #require(URL(string: server.url)?.port)
        let busy = Mutex(true)
        let proxy = try FaultProxy(targetPort: UInt16(port), plan: FaultPlan { _ in busy.withLock { $0 } ? .busy(retryAfter: 1) : nil })
        defer { proxy.stop() }
        let drain = try Running(["drain", ws.library, "--store", ws.store, "--to", "http://127.0.0.1:\(proxy.port)/uploads",
                                 "--retry-after-limit", "5", "--json"] + DrainCLITests.fast)
        #expect(drain.waitForOutput(containing: "\"event\":\"retry-after\""), "stderr: \(drain.stderr)")
        busy.withLock { $0 = false }
        #expect(drain.wait() == 0, "stderr: \(drain.stderr)")
        #expect(drain.stdout.contains("\"event\":\"uploaded\""))
        try DrainCLITests.expectOneIntactObjectPerPhoto(server, ws, photos: ["one.jpg"])
    }

    @Test func aRetryAfterLongerThanTheLimitExits75AndChargesNothing() throws {
        let ws = try Workspace()
        try ws.write("one.jpg", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg")))))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let port = try #require(URL(string: server.url)?.port)
        let proxy = try FaultProxy(targetPort: UInt16(port), plan: FaultPlan { _ in .busy(retryAfter: 3600) })
        defer { proxy.stop() }
        let started = Date()
        let run = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", "http://127.0.0.1:\(proxy.port)/uploads",
                               "--retry-after-limit", "2"] + DrainCLITests.fast)
        #expect(run.status == 75, "stderr: \(run.stderr)")
        #expect(Date().timeIntervalSince(started) < 1800, "drain waited for the hour it was asked to")  // not a speed target
        #expect(run.stderr.contains("asked to wait until"), "stderr: \(run.stderr)")
        let status = try Self.statusJSON(ws)
        let counts = try #require(status["counts"] as? [String: Any])
        #expect(counts["failed"] as? Int == 0)
        #expect(counts["analyzed"] as? Int == 1)
        let transfer = try #require(status["transfer"] as? [String: Any])
        #expect(transfer["retriesWaiting"] as? Int == 1)
        #expect((transfer["retryWaitSeconds"] as? Double ?? 0) > 3000)
        let text = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(text.stdout.contains("retries waiting"), "status: \(text.stdout)")
        let verdicts = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        let row = try #require(try JSONSerialization.jsonObject(with: Data((verdicts.lines.first ?? "{}").utf8)) as? [String: Any])
        // No failure recorded on the photo: the wait was not a counted attempt.
        #expect(row["state"] as? String == "analyzed" && row["error"] == nil, "row: \(row)")
        #expect(try server.objects().isEmpty)
    }
}
