import Foundation
import Testing

/// A file in the library that is not a photo PhotoDrain analyses never disappears: it
/// gets an `unanalysable` verdict, `status` names it and why, and it is uploaded as it is only
/// with `--upload-unanalysable`.
@Suite(.serialized) struct UnanalysableCLITests {
    static let fast = ["--analysis-size", "96"]
    static let movie: [UInt8] = [0, 0, 0, 0x14] + Array("ftypqt  ".utf8) + [UInt8](repeating: 0, count: 200)

    static func statusJSON(_ ws: Workspace) throws -> [String: Any] {
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        #expect(status.status == 0, "stderr: \(status.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
    }

    @Test func drainHoldsBackWhatIsNotAPhotoAndStatusSaysWhy() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        try ws.write("IMG_0001.MOV", bytes: Self.movie)
        try ws.write("notes.txt", bytes: Array("remember the milk\n".utf8))
        try ws.write(".DS_Store", bytes: [0, 0, 0, 1])
        #expect(mkfifo(ws.path("pipe"), 0o600) == 0)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)

        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--json"] + Self.fast)
        #expect(drain.status == 0, "stdout: \(drain.stdout) stderr: \(drain.stderr)")
        #expect(try server.objects().count == photos.count)
        #expect(drain.stderr.contains("skipped pipe: a FIFO, not a regular file"), "\(drain.stderr)")

        let report = try Self.statusJSON(ws)
        let counts = try #require(report["counts"] as? [String: Any])
        #expect(counts["total"] as? Int == photos.count + 2)     // not .DS_Store, not the FIFO
        #expect(counts["unanalysable"] as? Int == 2)
        #expect(counts["uploaded"] as? Int == photos.count)
        let unanalysable = try #require(report["unanalysable"] as? [[String: Any]])
        #expect(unanalysable.map { $0["path"] as? String } == ["IMG_0001.MOV", "notes.txt"])
        #expect((unanalysable.first?["reason"] as? String)?.hasPrefix("a QuickTime video") == true, "\(unanalysable)")
        #expect(unanalysable.last?["reason"] as? String == "not a JPEG, PNG, HEIF or WebP file")
        #expect(unanalysable.allSatisfy { $0["code"] as? String == "unsupported-format" && $0["state"] as? String == "analyzed" })
        let skipped = try #require(report["skipped"] as? [[String: Any]])
        #expect(skipped.map { $0["path"] as? String } == ["pipe"])
        #expect(skipped.first?["reason"] as? String == "a FIFO, not a regular file")

        let text = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(text.stdout.contains("Unanalysable (2)"), "\(text.stdout)")
        #expect(text.stdout.contains("IMG_0001.MOV: a QuickTime video"))
        #expect(text.stdout.contains("Skipped by the last scan (1)"))
        #expect(text.stdout.contains("pipe: a FIFO, not a regular file"))

        // Asked to, the next run sends them as they are, with their verdict.
        let more = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--json", "--upload-unanalysable"] + Self.fast)
        #expect(more.status == 0, "stdout: \(more.stdout) stderr: \(more.stderr)")
        let objects = try server.objects()
        #expect(objects.count == photos.count + 2)
        #expect(objects.contains { ($0["verdict"] as? String)?.contains("\"label\":\"unanalysable\"") == true }, "\(objects)")
        let after = try #require(try Self.statusJSON(ws)["counts"] as? [String: Any])
        #expect(after["unanalysable"] as? Int == 0 && after["uploaded"] as? Int == photos.count + 2)
    }

    @Test func analyzeCountsUnanalysableFilesApartFromUndecodablePhotos() throws {
        let ws = try Workspace()
        try ws.write("IMG_0001.MOV", bytes: Self.movie)
        try ws.write("broken.jpg", bytes: [0xFF, 0xD8, 0xFF, 0xE0, 0, 16] + Array(repeating: 7, count: 300))
        let result = try CLI.run(["analyze", ws.library, "--store", ws.store, "--json"] + Self.fast)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let verdicts = Dictionary(uniqueKeysWithValues: lines.filter { $0["event"] as? String == "verdict" }
            .compactMap { line in (line["path"] as? String).map { ($0, line["label"] as? String) } })
        #expect(verdicts == ["IMG_0001.MOV": "unanalysable", "broken.jpg": "error"])
        let summary = try #require(lines.last)
        #expect(summary["errors"] as? Int == 1 && summary["unanalysable"] as? Int == 1, "\(summary)")
        let text = try CLI.run(["analyze", ws.library, "--store", ws.store] + Self.fast)
        #expect(text.stderr.contains("2 files in "), "\(text.stderr)")
    }

    @Test func wakeCreatesJobsForUnanalysableFilesOnlyWhenAsked() throws {
        let ws = try Workspace()
        try ws.write("IMG_0001.MOV", bytes: Self.movie)
        let url = "http://127.0.0.1:9/uploads"   // never contacted: wake sends no bytes
        let first = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url, "--json"] + Self.fast)
        #expect(first.stdout.contains("\"analysed\":1") && first.stdout.contains("\"created\":0"), "\(first.stdout)")
        #expect(first.status == 0, "nothing else to do: \(first.stdout)")
        let asked = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url, "--json", "--upload-unanalysable"] + Self.fast)
        #expect(asked.stdout.contains("\"created\":1"), "\(asked.stdout)")
        #expect(asked.status == 75)
    }
}
