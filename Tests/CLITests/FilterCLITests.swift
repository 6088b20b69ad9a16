import Foundation
import Testing

/// --include/--exclude on the runners and readers, and --dry-run that changes
/// nothing.
@Suite(.serialized) struct FilterCLITests {
    static let fast = ["--analysis-size", "96"]

    /// A library of the samples in two folders, and a QuickTime video.
    static func twoYears() throws -> (Workspace, [String]) {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples(copies: 2)      // set0/..., set1/...
        try ws.write("set0/IMG_0001.MOV", bytes: [0, 0, 0, 0x14] + Array("ftypqt  ".utf8) + [UInt8](repeating: 0, count: 100))
        return (ws, photos)
    }

    static func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func analyzeWorksOnlyOnTheFilteredFilesAndStatusShowsThem() throws {
        let (ws, photos) = try Self.twoYears()
        let set0 = photos.filter { $0.hasPrefix("set0/") }
        let result = try CLI.run(["analyze", ws.library, "--store", ws.store, "--json", "--include", "set0/*", "--exclude", "*.MOV"] + Self.fast)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let banked = Self.jsonLines(result.stdout).filter { $0["event"] as? String == "verdict" }.compactMap { $0["path"] as? String }
        #expect(Set(banked) == Set(set0))
        let narrow = try CLI.run(["status", ws.library, "--store", ws.store, "--json", "--include", "set0/*"])
        let narrowCounts = try #require((try JSONSerialization.jsonObject(with: Data(narrow.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(narrowCounts["total"] as? Int == set0.count + 1 && narrowCounts["discovered"] as? Int == 1)   // the video waits
        let whole = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let wholeCounts = try #require((try JSONSerialization.jsonObject(with: Data(whole.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(wholeCounts["total"] as? Int == photos.count + 1)
        #expect(wholeCounts["discovered"] as? Int == photos.count - set0.count + 1)
        let verdicts = try CLI.run(["verdicts", ws.library, "--store", ws.store, "--exclude", "set0/*", "--format", "csv"])
        #expect(verdicts.lines.count == 1 + photos.count - set0.count)
        #expect(!verdicts.stdout.contains("set0/"))
    }

    @Test func drainDryRunListsTheWorkAndChangesNothing() throws {
        let (ws, photos) = try Self.twoYears()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        // No store yet: a dry run must not create one.
        let fresh = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--dry-run", "--json", "--exclude", "set1/*"])
        #expect(fresh.status == 0, "stderr: \(fresh.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws.store))
        let lines = Self.jsonLines(fresh.stdout)
        let set0 = photos.filter { $0.hasPrefix("set0/") }
        func paths(_ event: String) -> [String] { lines.filter { $0["event"] as? String == event }.compactMap { $0["path"] as? String } }
        #expect(Set(paths("would-analyse")) == Set(set0 + ["set0/IMG_0001.MOV"]))
        #expect(Set(paths("would-upload")) == Set(set0))
        #expect(paths("held-back") == ["set0/IMG_0001.MOV"])
        let summary = try #require(lines.last)
        #expect(summary["event"] as? String == "summary" && summary["dryRun"] as? Bool == true && summary["upload"] as? Int == set0.count)

        // Analysed for real; then a dry run lists the uploads waiting and sends nothing.
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + Self.fast).status == 0)
        let before = try CLI.run(["verdicts", ws.library, "--store", ws.store]).stdout
        let dry = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--dry-run"])
        #expect(dry.status == 0, "stderr: \(dry.stderr)")
        #expect(dry.stdout.contains("would upload set1/"), "\(dry.stdout)")
        #expect(dry.stdout.contains("would hold back set0/IMG_0001.MOV (unanalysable"), "\(dry.stdout)")
        #expect(dry.stdout.contains("would analyse 0, upload \(photos.count), hold back 1, skip 0; nothing was changed"), "\(dry.stdout)")
        #expect(try server.objects().isEmpty)
        #expect(try CLI.run(["verdicts", ws.library, "--store", ws.store]).stdout == before)
        #expect(!server.running.stderr.contains("/uploads"), "the dry run contacted the receiver: \(server.running.stderr)")
    }

    @Test func reportShowsOnlyTheFilteredFiles() throws {
        let (ws, photos) = try Self.twoYears()
        let out = ws.root.appendingPathComponent("set1.html").path
        let result = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out, "--include", "set1/*"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let html = try String(contentsOfFile: out, encoding: .utf8)
        let cards = html.components(separatedBy: "<article class=\"card\"").count - 1
        #expect(cards == photos.filter { $0.hasPrefix("set1/") }.count)
        #expect(!html.contains("data-path=\"set0/"))
    }

    /// With the default store (no --store) and the folder named another way, a dry run still
    /// finds the library's store rather than planning as if nothing were done.
    @Test func dryRunFindsTheDefaultStore() throws {
        let ws = try Workspace()
        try ws.write("notes.txt", bytes: Array("not a photo".utf8))
        let env = ["XDG_STATE_HOME": ws.root.appendingPathComponent("state").path]
        #expect(try CLI.run(["analyze", ws.library] + Self.fast, environment: env).status == 0)
        let dry = try CLI.run(["drain", ws.library + "/./", "--to", "http://127.0.0.1:9/uploads", "--dry-run", "--json"], environment: env)
        let summary = try #require(Self.jsonLines(dry.stdout).last)
        #expect(summary["analyse"] as? Int == 0 && summary["heldBack"] as? Int == 1, "\(dry.stdout) \(dry.stderr)")
        let held = Self.jsonLines(dry.stdout).first { $0["event"] as? String == "held-back" }
        #expect((held?["reason"] as? String)?.hasPrefix("unanalysable") == true, "\(dry.stdout)")
    }

    @Test func wakeAndDrainTakeFilters() throws {
        let (ws, photos) = try Self.twoYears()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--include", "set1/*"] + Self.fast)
        #expect(drain.status == 0, "stderr: \(drain.stderr)")
        let objects = try server.objects()
        #expect(objects.count == photos.filter { $0.hasPrefix("set1/") }.count)
        let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url, "--include", "set1/*", "--json"] + Self.fast)
        #expect(wake.status == 0, "set1 is done: \(wake.stdout)")
        let wakeDry = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url, "--dry-run", "--page-size", "2", "--json"])
        let summary = try #require(Self.jsonLines(wakeDry.stdout).last)
        #expect(summary["analyse"] as? Int == 2, "one page: \(wakeDry.stdout)")
    }

    @Test(arguments: [
        ["analyze", "LIB", "--include", ""],
        ["drain", "LIB", "--to", "http://127.0.0.1:9/uploads", "--exclude", ""],
        ["status", "LIB", "--include"],
        ["status", "LIB", "--dry-run"],
        ["verdicts", "LIB", "--exclude="],
    ])
    func badFiltersAreUsageErrors(arguments: [String]) throws {
        let ws = try Workspace()
        let result = try CLI.run(arguments.map { $0 == "LIB" ? ws.library : $0 } + ["--store", ws.store])
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws.store))
    }
}
