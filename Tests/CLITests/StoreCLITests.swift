import Foundation
import Testing

/// `status` and `verdicts` on stores they may not write, and commands on a damaged store.
@Suite struct StoreCLITests {
    /// Runs `photodrain arguments...` as a user who may not write the store: as root (who may
    /// write anything) through setpriv as nobody, else as the current user.
    static func runAsReader(_ arguments: [String]) throws -> CLI.Result {
        let wrapper = getuid() == 0 ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        return try CLI.run(arguments, through: wrapper)
    }

    /// A store in a folder the reader may not write (a read-only disk, another
    /// user's store) failed `status` with "attempt to write a readonly database": opening set
    /// the journal mode and would create the WAL files. `status` and `verdicts` only read.
    @Test func aReadOnlyStoreIsReadableByStatusAndVerdicts() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let analysed = try CLI.run(["analyze", ws.library, "--store", ws.store, "--analysis-size", "96"])
        #expect(analysed.status == 0, "stderr: \(analysed.stderr)")
        let folder = ws.root.path
        #expect(chmod(ws.store, 0o444) == 0 && chmod(folder, 0o555) == 0)
        defer { _ = chmod(folder, 0o755) }
        let before = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()

        let status = try Self.runAsReader(["status", ws.library, "--store", ws.store, "--json"])
        #expect(status.status == 0, "stderr: \(status.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let counts = try #require(report?["counts"] as? [String: Any])
        #expect(counts["total"] as? Int == photos.count)
        let verdicts = try Self.runAsReader(["verdicts", ws.library, "--store", ws.store])
        #expect(verdicts.status == 0, "stderr: \(verdicts.stderr)")
        #expect(verdicts.lines.count == photos.count)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == before)
    }
}

/// After a runner ends, the `.sqlite` file alone is a complete store (the
/// write-ahead log was checkpointed into it), so a backup that copies only it loses nothing.
@Suite struct StoreBackupCLITests {
    @Test(arguments: ["analyze", "drain"])
    func theDatabaseFileAloneHoldsEverythingAfterARun(command: String) throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        var server: ServeProcess?
        var arguments = [command, ws.library, "--store", ws.store, "--analysis-size", "96"]
        if command == "drain" {
            let receiver = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
            arguments += ["--to", receiver.url]
            server = receiver
        }
        let run = try CLI.run(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let wal = (try? FileManager.default.attributesOfItem(atPath: ws.store + "-wal")[.size] as? NSNumber)?.intValue ?? 0
        #expect(wal == 0, "the write-ahead log still holds \(wal) bytes")
        // Only the database file, copied elsewhere, read by status.
        let copy = ws.root.appendingPathComponent("backup.sqlite").path
        try FileManager.default.copyItem(atPath: ws.store, toPath: copy)
        let status = try CLI.run(["status", ws.library, "--store", copy, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(counts["total"] as? Int == photos.count)
        #expect(counts[command == "drain" ? "uploaded" : "analyzed"] as? Int == photos.count)
        withExtendedLifetime(server) {}
    }
}

/// `status` on a folder no runner has seen said zeros from a store it created.
@Suite struct NoStoreYetCLITests {
    @Test(arguments: ["status", "verdicts"])
    func readersSayThereIsNoStoreAndCreateNone(command: String) throws {
        let ws = try Workspace()
        _ = try ws.addSmallSamples()
        let state = ws.root.appendingPathComponent("state").path
        let result = try CLI.run([command, ws.library], environment: ["XDG_STATE_HOME": state])
        #expect(result.status == 1)
        #expect(result.stderr.contains("there is no store for"), "\(result.stderr)")
        #expect(result.stderr.contains("photodrain analyze"))
        let made = (try? FileManager.default.contentsOfDirectory(atPath: state + "/photodrain")) ?? []
        #expect(made.isEmpty, "a store was created: \(made)")
    }
}

/// Hidden files were dropped without a count; status counts them and
/// `--include-hidden` takes them in, for good.
@Suite struct HiddenFilesCLITests {
    @Test func hiddenEntriesAreCountedAndTakenInWhenAsked() throws {
        let ws = try Workspace()
        let photo = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg"))))
        try ws.write("cat.jpg", bytes: photo)
        try ws.write(".hidden.jpg", bytes: photo + [0])
        try ws.write(".thumbnails/a.jpg", bytes: photo + [1])
        try ws.write("2021/.DS_Store", bytes: [1, 2, 3])
        let fast = ["--analysis-size", "96"]
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + fast).status == 0)
        let status = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(status.stdout.contains("hidden, left out         3 (names starting with a dot"), "\(status.stdout)")
        #expect(status.stdout.contains("files                    1\n"), "\(status.stdout)")

        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store, "--include-hidden"] + fast).status == 0)
        // A later run without the flag keeps them (they are not "removed").
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + fast).status == 0)
        let json = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(counts["total"] as? Int == 4, "\(counts)")
        #expect(counts["hidden"] as? Int == 0, "\(counts)")
    }
}
