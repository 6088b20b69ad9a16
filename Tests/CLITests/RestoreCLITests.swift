import Foundation
import Testing

/// `photodrain restore` (issue 33) with the built binary against a real `photodrain serve`: what
/// `free-space` removed comes back from the trash, or from the destination byte for byte with its
/// modification time, and never over another file or from bytes that are not the photo's.
@Suite(.serialized) struct RestoreCLITests {
    typealias F = FreeSpaceCLITests

    /// A photo's bytes and modification time (nanoseconds), as the library had them.
    struct Snapshot: Equatable {
        let bytes: [UInt8]
        let mtime: Int64
    }

    static func snapshot(_ path: String) throws -> Snapshot {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CocoaError(.fileReadNoSuchFile) }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        return Snapshot(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))), mtime: mtime)
    }

    static func restore(_ d: F.Drained, _ extra: [String]) throws -> CLI.Result {
        try CLI.run(["restore", d.ws.library, "--store", d.ws.store, "--json"] + extra, environment: F.environment(d.ws))
    }

    /// The `--json` lines of a restore, by path, and its summary.
    static func lines(_ result: CLI.Result) -> (byPath: [String: [String: Any]], summary: [String: Any]) {
        F.plan(result)
    }

    /// The hidden files a download leaves beside a photo's place, if any.
    static func leftovers(_ ws: Workspace) throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: ws.library).filter { $0.contains(".photodrain-restore-") }
    }

    @Test func everyPhotoComesBackFromTheTrashWithItsTime() throws {
        let d = try F.drained()
        let before = try d.photos.map { try Self.snapshot(d.ws.path($0)) }
        let freed = try F.freeSpace(d)
        #expect(freed.status == 0, "stderr: \(freed.stderr)")
        F.expectOnly([], of: d.photos, in: d.ws)
        let dry = try Self.restore(d, ["--dry-run"])
        #expect(dry.status == 0, "stderr: \(dry.stderr)")
        #expect(Self.lines(dry).byPath.values.allSatisfy { $0["source"] as? String == "trash" })
        F.expectOnly([], of: d.photos, in: d.ws)

        let run = try Self.restore(d, [])
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        let (byPath, summary) = Self.lines(run)
        #expect(summary["restored"] as? Int == d.photos.count)
        for (photo, snapshot) in zip(d.photos, before) {
            #expect(byPath[photo]?["source"] as? String == "trash", "\(photo): \(byPath[photo] ?? [:])")
            #expect(try Self.snapshot(d.ws.path(photo)) == snapshot, "\(photo) came back changed")
        }
        let trash = F.trash(d.ws)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: trash + "/files")) ?? []).isEmpty)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: trash + "/info")) ?? []).isEmpty)
        // Restored is recorded: nothing is left to bring back, and the next free-space finds the
        // photos again (a scan adds them, their uploads already proven by content).
        let again = try Self.restore(d, [])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(Self.lines(again).summary["restored"] as? Int == 0)
        // A path naming nothing removed is a usage error, even beside one that does.
        let unknown = try Self.restore(d, [try #require(d.photos.first), "never-there.jpg"])
        #expect(unknown.status == 64, "\(unknown.stdout) \(unknown.stderr)")
        #expect(unknown.stderr.contains("never-there.jpg"))
    }

    @Test func aPhotoComesBackFromTheDestinationByteForByteAfterTheTrashIsEmptied() throws {
        let d = try F.drained()
        let photo = try #require(d.photos.first)
        let before = try Self.snapshot(d.ws.path(photo))
        #expect(try F.freeSpace(d).status == 0)
        let emptied = try CLI.run(["free-space", d.ws.library, "--store", d.ws.store, "--empty-trash"], environment: F.environment(d.ws))
        #expect(emptied.status == 0, "stderr: \(emptied.stderr)")
        #expect(emptied.stdout.contains("emptied the trash of \(d.photos.count) files"), "\(emptied.stdout)")

        let dry = try Self.restore(d, [photo, "--dry-run"])
        #expect(Self.lines(dry).byPath[photo]?["source"] as? String == "destination", "\(dry.stdout)")
        F.expectOnly([], of: d.photos, in: d.ws)

        let run = try Self.restore(d, [d.ws.path(photo)])
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        let (byPath, summary) = Self.lines(run)
        #expect(byPath[photo]?["source"] as? String == "destination", "\(run.stdout)")
        #expect(summary["restored"] as? Int == 1)
        #expect(try Self.snapshot(d.ws.path(photo)) == before)
        F.expectOnly([photo], of: d.photos, in: d.ws)
        #expect(try Self.leftovers(d.ws).isEmpty)
    }

    @Test func aPhotosCompanionComesBackWithItFromTheDestination() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let photo = try #require(photos.first)
        let edits = (photo as NSString).deletingPathExtension + ".AAE"
        try ws.write(edits, bytes: Array("<?xml version=\"1.0\"?><plist><dict/></plist>".utf8))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url] + F.fast)
        #expect(drain.status == 0, "stderr: \(drain.stderr)")
        let before = try [photo, edits].map { try Self.snapshot(ws.path($0)) }
        let d = F.Drained(ws: ws, server: server, photos: photos)
        let freed = try F.freeSpace(d, ["--delete", "--yes"])
        #expect(freed.status == 0, "stderr: \(freed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws.path(edits)), "the companion stayed: \(freed.stdout)")
        // Naming the photo brings its edits too, both downloaded and checked.
        let run = try Self.restore(d, [photo])
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        let (byPath, summary) = Self.lines(run)
        #expect(summary["restored"] as? Int == 2)
        #expect(byPath[edits]?["source"] as? String == "destination", "\(run.stdout)")
        #expect(try [photo, edits].map { try Self.snapshot(ws.path($0)) } == before)
        F.expectOnly([photo], of: photos, in: ws)
    }

    @Test func nothingIsRestoredIntoAnEmptyMountPoint() throws {
        let d = try F.drained()
        let photo = try #require(d.photos.first)
        // One photo goes; the rest of the library then moves away (an unmounted disk).
        let freed = try CLI.run(["free-space", d.ws.library, "--store", d.ws.store, "--delete", "--yes", "--include", photo]
                                + F.everything, environment: F.environment(d.ws))
        #expect(freed.status == 0, "stderr: \(freed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: d.ws.path(photo)))
        let away = d.ws.root.appendingPathComponent("away").path
        try FileManager.default.moveItem(atPath: d.ws.library, toPath: away)
        try FileManager.default.createDirectory(atPath: d.ws.library, withIntermediateDirectories: true)
        let run = try Self.restore(d, [])
        #expect(run.status == 1, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stderr.contains("unmounted"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.ws.library).isEmpty)
    }

    @Test func aFileAtThePhotosPathIsNeverReplaced() throws {
        let d = try F.drained()
        let photo = try #require(d.photos.first)
        #expect(try F.freeSpace(d, ["--delete", "--yes"]).status == 0)
        let other = Array("not the photo".utf8)
        try d.ws.write(photo, bytes: other)
        let run = try Self.restore(d, [])
        #expect(run.status == 1, "stdout: \(run.stdout) stderr: \(run.stderr)")
        let (byPath, summary) = Self.lines(run)
        #expect((byPath[photo]?["error"] as? String)?.contains("another file") == true, "\(run.stdout)")
        #expect(summary["restored"] as? Int == d.photos.count - 1)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: d.ws.path(photo)))) == other)
        for rest in d.photos.dropFirst() { #expect(FileManager.default.fileExists(atPath: d.ws.path(rest)), "\(rest)") }
    }

    @Test func bytesThatAreNotThePhotosNeverTakeItsPlace() throws {
        var d: F.Drained? = try F.drained()
        let ws = try #require(d?.ws)
        let photos = try #require(d?.photos)
        #expect(try F.freeSpace(try #require(d), ["--delete", "--yes"]).status == 0)
        let server = try #require(d?.server)
        let port = try #require(URLComponents(string: server.url)?.port.map { UInt16($0) })
        server.running.signal(SIGTERM)
        server.running.wait()
        d = nil
        // Down: nothing comes back, and a rerun is asked for.
        let down = try CLI.run(["restore", ws.library, "--store", ws.store, "--json"], environment: F.environment(ws))
        #expect(down.status == 75, "stdout: \(down.stdout) stderr: \(down.stderr)")
        F.expectOnly([], of: photos, in: ws)
        // A receiver at its place that claims every photo and serves other bytes.
        let liar = try F.liar(port: port)
        defer { liar.stop() }
        let run = try CLI.run(["restore", ws.library, "--store", ws.store, "--json"], environment: F.environment(ws))
        #expect(run.status == 1, "stdout: \(run.stdout) stderr: \(run.stderr)")
        let (byPath, summary) = Self.lines(run)
        #expect(summary["restored"] as? Int == 0)
        for photo in photos {
            #expect((byPath[photo]?["error"] as? String)?.contains("not the photo's bytes") == true, "\(photo): \(byPath[photo] ?? [:])")
        }
        F.expectOnly([], of: photos, in: ws)
        #expect(try Self.leftovers(ws).isEmpty)
    }

    @Test func statusAndReportShowWhatIsFreedAndInTheTrash() throws {
        let d = try F.drained()
        let quiet = try CLI.run(["status", d.ws.library, "--store", d.ws.store])
        #expect(!quiet.stdout.contains("in the trash"), "status shows a trash before any free-space: \(quiet.stdout)")
        let sizes = try d.photos.map { try #require(try FileManager.default.attributesOfItem(atPath: d.ws.path($0))[.size] as? Int) }
        #expect(try F.freeSpace(d).status == 0)
        let photo = try #require(d.photos.first)
        #expect(try Self.restore(d, [photo]).status == 0)
        let status = try CLI.run(["status", d.ws.library, "--store", d.ws.store, "--json"])
        #expect(status.status == 0, "stderr: \(status.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let freed = try #require(report["freed"] as? [String: Any], "\(status.stdout)")
        #expect(freed["inTrash"] as? Int == d.photos.count - 1)
        #expect(freed["trashBytes"] as? Int == sizes.dropFirst().reduce(0, +))
        #expect(freed["restored"] as? Int == 1)
        let text = try CLI.run(["status", d.ws.library, "--store", d.ws.store])
        #expect(text.stdout.contains("in the trash"), "\(text.stdout)")
        #expect(text.stdout.contains("\(d.photos.count - 1) files"), "\(text.stdout)")
        let out = d.ws.root.appendingPathComponent("report.html").path
        let html = try CLI.run(["report", d.ws.library, "--store", d.ws.store, "--out", out, "--single-file"])
        #expect(html.status == 0, "stderr: \(html.stderr)")
        #expect(try String(contentsOfFile: out, encoding: .utf8).contains("freed by free-space"))
    }
}
