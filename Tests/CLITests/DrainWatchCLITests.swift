import Foundation
import Testing

/// `drain --watch` keeps running, uploads photos copied in after it
/// started (into a new folder too) within the quiet period plus 5 s, survives its library folder
/// going away and coming back, and ends on SIGTERM or SIGINT with the usual summary.
@Suite(.serialized) struct DrainWatchCLITests {
    /// `drain`'s default quiet period: a file changed this recently may still be being copied.
    static let quietPeriod = 2.0

    /// Bytes of a photo not in the library yet: one of its photos with `marker` after its end
    /// (a JPEG decodes as before; the content hash is new).
    static func newPhoto(from ws: Workspace, _ name: String, marker: UInt8) throws -> Data {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: ws.path(name)))
        bytes.append(marker)
        return bytes
    }

    /// Waits until the receiver holds `count` objects, up to `seconds`; how long that took, or nil.
    static func waitForObjects(_ server: ServeProcess, count: Int, seconds: Double) -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            if let objects = try? server.objects(), objects.count >= count { return Date().timeIntervalSince(start) }
            usleep(100_000)
        }
        return nil
    }

    @Test func aPhotoCopiedInAfterTheStartIsUploadedWithinTheQuietPeriodPlusFiveSeconds() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try Running(["drain", ws.library, "--store", ws.store, "--to", server.url, "--watch", "--json"] + DrainCLITests.fast)
        defer { if drain.process.isRunning { drain.signal(SIGKILL) } }
        #expect(drain.waitForOutput(containing: "\"event\":\"watching\"", seconds: 60), "stderr: \(drain.stderr)")
        #expect(drain.stdout.contains("\"folders\":1"), "stdout: \(drain.stdout)")
        #expect(try server.objects().count == photos.count)

        // Copied in as cp does it, written in place: one at the top, one into a new folder.
        let copiedAt = Date()
        try Self.newPhoto(from: ws, photos[0], marker: 1).write(to: URL(fileURLWithPath: ws.path("late.jpg")))
        try FileManager.default.createDirectory(atPath: ws.path("2024/March"), withIntermediateDirectories: true)
        try Self.newPhoto(from: ws, photos[1], marker: 2).write(to: URL(fileURLWithPath: ws.path("2024/March/late.jpg")))
        let took = Self.waitForObjects(server, count: photos.count + 2, seconds: Self.quietPeriod + 5 - Date().timeIntervalSince(copiedAt))
        #expect(took != nil, "not uploaded within \(Self.quietPeriod + 5) s; stdout: \(drain.stdout)\nstderr: \(drain.stderr)")
        #expect(drain.process.isRunning)
        // Idle again, now watching the new folders too.
        #expect(drain.waitForOutput(containing: "\"folders\":3", seconds: 10), "stdout: \(drain.stdout)")
        #expect(drain.stdout.contains("\"event\":\"changed\""))

        drain.signal(SIGTERM)
        #expect(drain.wait() == 0, "stderr: \(drain.stderr)")
        let summary = try #require(drain.stdout.split(separator: "\n").last.flatMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        })
        #expect(summary["event"] as? String == "summary")
        #expect(summary["outcome"] as? String == "watch ended by SIGTERM")
        #expect(summary["uploaded"] as? Int == photos.count + 2)
        try DrainCLITests.expectOneIntactObjectPerPhoto(server, ws, photos: photos + ["late.jpg", "2024/March/late.jpg"])
    }

    /// The library folder moved away (as an unmount takes it) and back: the run waits instead of
    /// ending or seeing every photo removed, reads it in full, and takes what is new in it.
    @Test func aLibraryThatGoesAwayAndComesBackIsWatchedAgain() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try Running(["drain", ws.library, "--store", ws.store, "--to", server.url, "--watch", "--rescan-interval", "1"] + DrainCLITests.fast)
        defer { if drain.process.isRunning { drain.signal(SIGKILL) } }
        #expect(drain.waitForError(containing: "watching 1 folder for new photos", seconds: 60), "stderr: \(drain.stderr)")

        let aside = ws.root.appendingPathComponent("aside").path
        let added = try Self.newPhoto(from: ws, photos[0], marker: 3)
        try FileManager.default.moveItem(atPath: ws.library, toPath: aside)
        #expect(drain.waitForError(containing: "waiting for it to come back"), "stderr: \(drain.stderr)")
        // Away for longer than --rescan-interval: no scan may see the photos removed.
        try added.write(to: URL(fileURLWithPath: aside + "/while-away.jpg"))
        usleep(1_500_000)
        #expect(drain.process.isRunning)
        try FileManager.default.moveItem(atPath: aside, toPath: ws.library)
        #expect(drain.waitForError(containing: "is back; reading it in full"), "stderr: \(drain.stderr)")
        #expect(Self.waitForObjects(server, count: photos.count + 1, seconds: Self.quietPeriod + 5) != nil, "stderr: \(drain.stderr)")

        drain.signal(SIGINT)
        #expect(drain.wait() == 0, "stderr: \(drain.stderr)")
        #expect(drain.stdout.contains("watch ended by SIGINT"), "stdout: \(drain.stdout)")
        #expect(drain.stderr.range(of: "[1-9][0-9]* removed", options: .regularExpression) == nil, "a scan saw photos removed: \(drain.stderr)")
        try DrainCLITests.expectOneIntactObjectPerPhoto(server, ws, photos: photos + ["while-away.jpg"])
    }
}
