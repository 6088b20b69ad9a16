import Foundation
import Testing

/// `photodrain free-space` (issue 33) with the built binary against a real `photodrain serve`:
/// each rule that keeps a photo, seen from the command line. Every test drains a library first,
/// then breaks one thing and checks the photo it concerns stays (and why), while the others go.
@Suite(.serialized) struct FreeSpaceCLITests {
    static let fast = ["--analysis-size", "96"]
    /// A run over the whole small library: any age, no share limit.
    static let everything = ["--older-than", "0", "--max-fraction", "100%"]

    /// A drained library of the small samples, its receiver, and the photos' relative paths.
    struct Drained {
        let ws: Workspace
        let server: ServeProcess
        let photos: [String]
    }

    static func drained() throws -> Drained {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url] + fast)
        #expect(drain.status == 0, "stderr: \(drain.stderr)")
        return Drained(ws: ws, server: server, photos: photos)
    }

    /// The `--json` lines of a run, by photo path, and its summary.
    static func plan(_ result: CLI.Result) -> (byPath: [String: [String: Any]], summary: [String: Any]) {
        var byPath: [String: [String: Any]] = [:]
        var summary: [String: Any] = [:]
        for line in result.lines {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
            if object["event"] as? String == "summary" { summary = object } else if let path = object["path"] as? String { byPath[path] = object }
        }
        return (byPath, summary)
    }

    static func dryRun(_ d: Drained, _ extra: [String] = []) throws -> CLI.Result {
        try CLI.run(["free-space", d.ws.library, "--store", d.ws.store, "--dry-run", "--json"] + everything + extra,
                    environment: environment(d.ws))
    }

    /// A run that removes: its home trash in the workspace, never the tester's own.
    static func freeSpace(_ d: Drained, _ extra: [String] = []) throws -> CLI.Result {
        try CLI.run(["free-space", d.ws.library, "--store", d.ws.store, "--json"] + everything + extra, environment: environment(d.ws))
    }

    static func environment(_ ws: Workspace) -> [String: String] { ["XDG_DATA_HOME": ws.root.appendingPathComponent("data").path] }

    static func trash(_ ws: Workspace) -> String { ws.root.appendingPathComponent("data/Trash").path }

    /// Expects `kept` in place with its bytes, and every other photo of `photos` gone.
    static func expectOnly(_ kept: [String], of photos: [String], in ws: Workspace) {
        for photo in photos {
            let there = FileManager.default.fileExists(atPath: ws.path(photo))
            #expect(there == kept.contains(photo), "\(photo): \(there ? "still in the library" : "removed")")
        }
    }

    /// Runs SQL on the store with the sqlite3 tool (a state no command makes on purpose).
    static func sql(_ store: String, _ statement: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [store, statement]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "sqlite3 failed: \(statement)")
    }

    @Test func everyProvenPhotoWouldGoAndADryRunRemovesNothing() throws {
        let d = try Self.drained()
        let run = try Self.dryRun(d)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let (byPath, summary) = Self.plan(run)
        for photo in d.photos {
            #expect(byPath[photo]?["action"] as? String == "remove", "\(photo): \(byPath[photo] ?? [:])")
            #expect(FileManager.default.fileExists(atPath: d.ws.path(photo)))
        }
        #expect(summary["remove"] as? Int == d.photos.count)
        #expect(summary["dryRun"] as? Bool == true)
        let text = try CLI.run(["free-space", d.ws.library, "--store", d.ws.store, "--dry-run"] + Self.everything)
        #expect(text.stdout.contains("\(d.photos.count) photos (\(d.photos.count) files"), "\(text.stdout)")
        #expect(text.stdout.contains("dry run: nothing removed"))
    }

    @Test func aPhotoTheDestinationLostStays() throws {
        let d = try Self.drained()
        let objects = try d.server.objects()
        let lost = try #require(objects.first)
        let id = try #require(lost["id"] as? String)
        let name = try #require(lost["filename"] as? String)
        try FileManager.default.removeItem(atPath: d.server.directory + "/objects/" + id)
        let run = try Self.freeSpace(d)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let (byPath, _) = Self.plan(run)
        let photo = try #require(d.photos.first { ($0 as NSString).lastPathComponent == name })
        #expect(byPath[photo]?["action"] as? String == "keep")
        #expect(byPath[photo]?["reason"] as? String == "missing-at-destination")
        #expect(byPath.values.filter { $0["action"] as? String == "trashed" }.count == d.photos.count - 1)
        Self.expectOnly([photo], of: d.photos, in: d.ws)
    }

    @Test func aDestinationThatIsDownRemovesNothingAndAsksForARerun() throws {
        var d: Drained? = try Self.drained()
        let ws = try #require(d?.ws)
        let photos = try #require(d?.photos)
        // Stop the receiver: its port answers nothing now.
        let store = ws.store, library = ws.library
        let server = try #require(d?.server)
        server.running.signal(SIGTERM)
        server.running.wait()
        d = nil
        let run = try CLI.run(["free-space", library, "--store", store, "--json"] + Self.everything, environment: Self.environment(ws))
        #expect(run.status == 75, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stderr.contains("nothing is removed"))
        let (byPath, summary) = Self.plan(run)
        #expect(byPath.values.allSatisfy { $0["action"] as? String == "keep" })
        #expect(summary["remove"] as? Int == 0)
        for photo in photos { #expect(FileManager.default.fileExists(atPath: ws.path(photo))) }
    }

    @Test func aPhotoEditedSinceItsUploadStays() throws {
        let d = try Self.drained()
        let edited = try #require(d.photos.first)
        // The same size, one byte other, the modification time put back: only hashing tells.
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: d.ws.path(edited))))
        let attributes = try FileManager.default.attributesOfItem(atPath: d.ws.path(edited))
        bytes[bytes.count / 2] ^= 0x5A
        try Data(bytes).write(to: URL(fileURLWithPath: d.ws.path(edited)))
        try FileManager.default.setAttributes([.modificationDate: attributes[.modificationDate] as Any], ofItemAtPath: d.ws.path(edited))
        let run = try Self.freeSpace(d)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let (byPath, _) = Self.plan(run)
        #expect(byPath[edited]?["action"] as? String == "keep")
        #expect(byPath[edited]?["reason"] as? String == "changed-since-upload")
        Self.expectOnly([edited], of: d.photos, in: d.ws)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: d.ws.path(edited)))) == bytes)
    }

    @Test func aCompanionNotYetProvenKeepsItsPhoto() throws {
        let d = try Self.drained()
        let photo = try #require(d.photos.first)
        let stem = (photo as NSString).deletingPathExtension
        // An edit list appears after the upload: scanned and linked, not uploaded yet.
        try d.ws.write(stem + ".AAE", bytes: Array("<?xml version=\"1.0\"?><plist/>".utf8))
        let status = try CLI.run(["analyze", d.ws.library, "--store", d.ws.store] + Self.fast)
        #expect(status.status == 0, "stderr: \(status.stderr)")
        let run = try Self.freeSpace(d)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let (byPath, _) = Self.plan(run)
        #expect(byPath[photo]?["action"] as? String == "keep", "\(byPath[photo] ?? [:])")
        #expect(byPath[photo]?["reason"] as? String == "companion-not-uploaded")
        #expect(byPath[photo]?["companions"] as? [String] == [stem + ".AAE"])
        Self.expectOnly([photo], of: d.photos, in: d.ws)
        #expect(FileManager.default.fileExists(atPath: d.ws.path(stem + ".AAE")))
    }

    @Test func anUnverifiedUploadStays() throws {
        let d = try Self.drained()
        let photo = try #require(d.photos.first)
        try Self.sql(d.ws.store, "UPDATE uploads SET proof = 'unverified' WHERE asset_id = (SELECT id FROM assets WHERE path = '\(photo)')")
        let legacy = try #require(d.photos.last)
        try Self.sql(d.ws.store, "UPDATE uploads SET proof = 'legacy' WHERE asset_id = (SELECT id FROM assets WHERE path = '\(legacy)')")
        let run = try Self.freeSpace(d)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let (byPath, _) = Self.plan(run)
        #expect(byPath[photo]?["reason"] as? String == "uploaded-unverified")
        #expect(byPath[legacy]?["reason"] as? String == "proof-not-verified")
        #expect(byPath.values.filter { $0["action"] as? String == "trashed" }.count == d.photos.count - 2)
        Self.expectOnly([photo, legacy], of: d.photos, in: d.ws)
    }

    /// A receiver that lost every photo and lies about it: its digest lookup says it holds
    /// whatever it is asked for, and the object it names downloads as nothing.
    static func liar(port: UInt16) throws -> HostileReceiver {
        try HostileReceiver(port: port) { request in
            if request.method == "OPTIONS" { return .respond(status: 200, headers: [("Upload-Limit", "max-size=1000000000")]) }
            let prefix = "/objects/by-digest/"
            if request.method == "HEAD", let range = request.path.range(of: prefix) {
                let hex = String(request.path[range.upperBound...])
                var digest = [UInt8]()
                var index = hex.startIndex
                while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
                      let byte = UInt8(hex[index..<next], radix: 16) {
                    digest.append(byte)
                    index = next
                }
                return .respond(status: 200, headers: [("X-Server-Resource-ID", "obj-\(hex.prefix(16))"),
                                                       ("Repr-Digest", "sha-256=:\(Data(digest).base64EncodedString()):")])
            }
            if request.method == "GET", request.path.hasSuffix("/content") { return .respond(status: 200, headers: []) }
            return .respond(status: 404, headers: [])
        }
    }

    @Test func aLyingDigestLookupIsCaughtByDeep() throws {
        var d: Drained? = try Self.drained()
        let ws = try #require(d?.ws)
        let photos = try #require(d?.photos)
        let server = try #require(d?.server)
        let port = try #require(URLComponents(string: server.url)?.port.map { UInt16($0) })
        server.running.signal(SIGTERM)
        server.running.wait()
        d = nil
        // The liar takes the receiver's place: the same URL, so the same destination's proofs.
        let liar = try Self.liar(port: port)
        defer { liar.stop() }
        let base = ["free-space", ws.library, "--store", ws.store, "--json"] + Self.everything
        // Its word alone passes: every photo would go (the lie is one the shallow check cannot see).
        let shallow = try CLI.run(base + ["--dry-run"], environment: Self.environment(ws))
        #expect(shallow.status == 0, "stderr: \(shallow.stderr)")
        #expect(Self.plan(shallow).byPath.values.filter { $0["action"] as? String == "remove" }.count == photos.count)
        let deep = try CLI.run(base + ["--deep"], environment: Self.environment(ws))
        #expect(deep.status == 0, "stdout: \(deep.stdout) stderr: \(deep.stderr)")
        let (byPath, summary) = Self.plan(deep)
        for photo in photos {
            #expect(byPath[photo]?["reason"] as? String == "mismatched-at-destination", "\(photo): \(byPath[photo] ?? [:])")
        }
        #expect(summary["remove"] as? Int == 0)
        #expect(liar.requests.contains { $0.method == "GET" && $0.path.hasSuffix("/content") }, "--deep downloaded nothing")
        Self.expectOnly(photos, of: photos, in: ws)
    }

    @Test func anEmptyLibraryOrATooLargeShareStopsTheRun() throws {
        let d = try Self.drained()
        let over = try CLI.run(["free-space", d.ws.library, "--store", d.ws.store, "--older-than", "0"], environment: Self.environment(d.ws))
        #expect(over.status == 1, "stdout: \(over.stdout)")
        #expect(over.stderr.contains("--max-fraction 50%"), "\(over.stderr)")
        Self.expectOnly(d.photos, of: d.photos, in: d.ws)

        // The library's files move away (an unmounted disk leaves an empty mount point).
        let away = d.ws.root.appendingPathComponent("away").path
        try FileManager.default.moveItem(atPath: d.ws.library, toPath: away)
        try FileManager.default.createDirectory(atPath: d.ws.library, withIntermediateDirectories: true)
        let empty = try CLI.run(["free-space", d.ws.library, "--store", d.ws.store] + Self.everything, environment: Self.environment(d.ws))
        #expect(empty.status == 1, "stdout: \(empty.stdout) stderr: \(empty.stderr)")
        #expect(empty.stderr.contains("not mounted"), "\(empty.stderr)")
    }

    @Test func anErrorReadingTheStoreRemovesNothing() throws {
        let d = try Self.drained()
        // The removals table cannot be read (nor written): the run stops before any file moves.
        try Self.sql(d.ws.store, "ALTER TABLE removals RENAME TO removals_elsewhere")
        for mode in [[], ["--delete", "--yes"]] {
            let run = try Self.freeSpace(d, mode)
            #expect(run.status == 1, "\(mode): stdout: \(run.stdout) stderr: \(run.stderr)")
            #expect(run.stderr.contains("removals"), "\(run.stderr)")
            Self.expectOnly(d.photos, of: d.photos, in: d.ws)
        }
    }

    @Test func badValuesAreUsageErrors() throws {
        let d = try Self.drained()
        for bad in [["--older-than", "3 days"], ["--until-free", "lots"], ["--max-fraction", "0%"], ["--max-fraction", "150%"]] {
            let run = try CLI.run(["free-space", d.ws.library, "--store", d.ws.store, "--dry-run"] + bad)
            #expect(run.status == 64, "\(bad): \(run.stderr)")
        }
    }

    @Test func removedPhotosGoToTheTrashAreCountedAndNeverUploadedAgain() throws {
        let d = try Self.drained()
        let sizes = try d.photos.map { try #require(try FileManager.default.attributesOfItem(atPath: d.ws.path($0))[.size] as? Int) }
        let run = try Self.freeSpace(d)
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        let (byPath, summary) = Self.plan(run)
        #expect(summary["remove"] as? Int == d.photos.count)
        #expect(summary["bytes"] as? Int == sizes.reduce(0, +))
        Self.expectOnly([], of: d.photos, in: d.ws)
        let trash = Self.trash(d.ws)
        for photo in d.photos {
            #expect(byPath[photo]?["action"] as? String == "trashed")
            let name = (photo as NSString).lastPathComponent
            #expect(FileManager.default.fileExists(atPath: trash + "/files/" + name))
            let info = try String(contentsOfFile: trash + "/info/\(name).trashinfo", encoding: .utf8)
            #expect(info.contains("Path=\(d.ws.path(photo))"), "\(info)")
        }
        // Nothing left to free, and a drain finds nothing to send: the trash is no library.
        let again = try Self.freeSpace(d)
        #expect(again.status == 0)
        #expect(Self.plan(again).summary["remove"] as? Int == 0)
        let drain = try CLI.run(["drain", d.ws.library, "--store", d.ws.store, "--to", d.server.url, "--json", "--include-hidden"] + Self.fast)
        #expect(drain.status == 0, "stderr: \(drain.stderr)")
        #expect(!drain.stdout.contains("\"event\":\"uploaded\""), "\(drain.stdout)")
        #expect(try d.server.objects().count == d.photos.count)

        let emptied = try CLI.run(["free-space", d.ws.library, "--store", d.ws.store, "--empty-trash"], environment: Self.environment(d.ws))
        #expect(emptied.status == 0, "stderr: \(emptied.stderr)")
        #expect(emptied.stdout.contains("emptied the trash of \(d.photos.count) files"), "\(emptied.stdout)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: trash + "/files")) ?? []).isEmpty)
    }

    @Test func aLaterRunEmptiesTheTrashOfWhatIsOlderThanTrashDays() throws {
        let d = try Self.drained()
        #expect(try Self.freeSpace(d).status == 0)
        let files = Self.trash(d.ws) + "/files"
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []).count == d.photos.count)
        // The default 30 days keeps them; 0 days empties the trash of all of them, at the run's start.
        #expect(try Self.freeSpace(d).status == 0)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []).count == d.photos.count)
        let run = try Self.freeSpace(d, ["--trash-days", "0"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: files)) ?? []).isEmpty)
        let status = try CLI.run(["status", d.ws.library, "--store", d.ws.store, "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let freed = try #require(report["freed"] as? [String: Any])
        #expect(freed["gone"] as? Int == d.photos.count && freed["inTrash"] as? Int == 0, "\(freed)")
    }

    @Test func deleteRemovesAtOnceOnlyWhenConfirmed() throws {
        let d = try Self.drained()
        let refused = try Self.freeSpace(d, ["--delete"])
        #expect(refused.status == 64, "\(refused.stderr)")
        Self.expectOnly(d.photos, of: d.photos, in: d.ws)
        let deleted = try Self.freeSpace(d, ["--delete", "--yes"])
        #expect(deleted.status == 0, "stderr: \(deleted.stderr)")
        #expect(Self.plan(deleted).byPath.values.allSatisfy { $0["action"] as? String == "deleted" })
        Self.expectOnly([], of: d.photos, in: d.ws)
        #expect(!FileManager.default.fileExists(atPath: Self.trash(d.ws) + "/files"))
    }
}
