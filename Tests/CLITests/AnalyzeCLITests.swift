import Foundation
import Testing

/// `photodrain analyze` run as a user would, killed and rerun.
@Suite(.serialized) struct AnalyzeCLITests {
    static let fast = ["--analysis-size", "96"]

    /// Every `verdict` JSON line's path in `output`.
    static func bankedPaths(_ output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["event"] as? String == "verdict" else { return nil }
            return object["path"] as? String
        }
    }

    @Test func analysesEveryPhotoAndReportsUndecodableOnes() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        try ws.write("broken.jpg", bytes: [0xFF, 0xD8, 0xFF, 0xE0, 0, 16] + Array(repeating: 7, count: 300))
        let result = try CLI.run(["analyze", ws.library, "--store", ws.store, "--json"] + Self.fast)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Set(Self.bankedPaths(result.stdout)) == Set(photos + ["broken.jpg"]))
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let counts = try #require(report["counts"] as? [String: Any])
        #expect(counts["total"] as? Int == photos.count + 1)
        #expect(counts["discovered"] as? Int == 0)
        #expect(counts["undecodable"] as? Int == 1)
        let undecodable = try #require(report["undecodable"] as? [[String: Any]])
        #expect(undecodable.first?["path"] as? String == "broken.jpg")
        // A second run has nothing to do.
        let again = try CLI.run(["analyze", ws.library, "--store", ws.store, "--json"] + Self.fast)
        #expect(again.status == 0 && Self.bankedPaths(again.stdout).isEmpty)
    }

    @Test(arguments: [0.4, 1.0, 2.0])
    func killedAtAnyPointLosesNothingAndRedoesNothing(after seconds: Double) throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples(copies: 2)
        var banked: [String] = []
        var runs = 0
        var status: Int32 = -1
        // Kill the first runs at the given moment, then let one finish.
        while status != 0 && runs < 8 {
            let run = try Running(["analyze", ws.library, "--store", ws.store, "--json", "--slots", "2"] + Self.fast)
            if runs < 2 {
                usleep(useconds_t(seconds * 1_000_000))
                run.signal(SIGKILL)
            }
            status = run.wait()
            banked += Self.bankedPaths(run.stdout)
            runs += 1
        }
        #expect(status == 0)
        // Every photo ends with exactly one banked verdict across all the runs.
        #expect(banked.count == photos.count, "banked \(banked.count) verdicts for \(photos.count) photos")
        #expect(Set(banked) == Set(photos))
        let csv = try CLI.run(["verdicts", ws.library, "--store", ws.store, "--format", "csv"])
        #expect(csv.lines.count == photos.count + 1)
        #expect(!csv.stdout.contains(",discovered,"))
    }

    @Test func twoRunnersOnOneStoreNeverAnalyseAPhotoTwice() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples(copies: 2)
        // Scan once so both runners start from the same rows.
        _ = try CLI.run(["status", ws.library, "--store", ws.store])
        let a = try Running(["analyze", ws.library, "--store", ws.store, "--json", "--slots", "1"] + Self.fast)
        let b = try Running(["analyze", ws.library, "--store", ws.store, "--json", "--slots", "1"] + Self.fast)
        let statusA = a.wait(), statusB = b.wait()
        #expect(statusA == 0 || statusA == 75)
        #expect(statusB == 0 || statusB == 75)
        let banked = Self.bankedPaths(a.stdout) + Self.bankedPaths(b.stdout)
        #expect(banked.count == photos.count && Set(banked).count == photos.count)
        #expect(!a.stderr.contains("locked") && !b.stderr.contains("locked"), "\(a.stderr)\(b.stderr)")
        let finish = try CLI.run(["analyze", ws.library, "--store", ws.store, "--json"] + Self.fast)
        #expect(finish.status == 0 && Self.bankedPaths(finish.stdout).isEmpty)
    }

    @Test func changedRemovedAndAddedPhotosBetweenRuns() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + Self.fast).status == 0)
        try FileManager.default.removeItem(atPath: ws.path(photos[0]))
        let changed = try Data(contentsOf: URL(fileURLWithPath: ws.path(photos[2])))
        try ws.write(photos[1], bytes: [UInt8](changed))          // modified: new content
        try ws.write("new/extra.jpg", bytes: [UInt8](changed))    // added
        let rerun = try CLI.run(["analyze", ws.library, "--store", ws.store, "--json"] + Self.fast)
        #expect(rerun.status == 0)
        #expect(Set(Self.bankedPaths(rerun.stdout)) == Set([photos[1], "new/extra.jpg"]))
        let verdicts = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        #expect(verdicts.lines.count == photos.count)  // one removed, one added
        #expect(!verdicts.stdout.contains("\"path\":\"\(photos[0])\""))
    }

    /// A `--memory-limit` below the process's own footprint can never let a
    /// photo be analysed, so "work remains, run again" (75) would be a lie repeated forever.
    /// `analyze` and `drain` exit 1 with "no progress possible", as `wake` does.
    @Test(arguments: ["analyze", "drain"])
    func aMemoryCapBelowTheProcessFootprintIsNoProgressPossible(command: String) throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        var arguments = [command, ws.library, "--store", ws.store, "--memory-limit", "8M"] + Self.fast
        if command == "drain" { arguments += ["--to", "http://127.0.0.1:9/uploads", "--offline-timeout", "1"] }
        for _ in 0..<2 {  // and again: a rerun cannot help either
            let result = try CLI.run(arguments)
            #expect(result.status == 1, "stderr: \(result.stderr)")
            #expect(result.stderr.contains("no progress possible"))
        }
    }

    /// A memory limit that leaves headroom, but less than a photo needs at its
    /// analysis scale, once made the runners decode it smaller and bank that lesser verdict. Now
    /// nothing is banked, the photo stays to analyse, and since no rerun under that limit can
    /// help, `analyze`, `drain` and `wake` exit 1 saying what the photo needs.
    @Test(arguments: ["analyze", "drain", "wake"])
    func aPhotoTooLargeForTheLimitIsNeverAnalysedSmaller(command: String) throws {
        let ws = try Workspace()
        try ws.addGrayPhoto("large.jpg", width: 6000, height: 4000)
        var arguments = [command, ws.library, "--store", ws.store, "--memory-limit", "100M"]
        if command == "drain" { arguments += ["--to", "http://127.0.0.1:9/uploads", "--offline-timeout", "1"] }
        if command == "wake" { arguments += ["--to", "http://127.0.0.1:9/uploads"] }
        let result = try CLI.run(arguments)
        #expect(result.status == 1, "stdout: \(result.stdout) stderr: \(result.stderr)")
        let said = result.stdout + result.stderr
        #expect(said.contains("analysing 6000x4000 needs about "), "\(said)")
        if command != "wake" {
            #expect(result.stderr.contains("no progress possible: the memory limit (100 MiB, from --memory-limit) leaves "), "\(result.stderr)")
            #expect(result.stderr.contains("at its analysis scale, and no photo is analysed smaller to fit"), "\(result.stderr)")
        } else {
            #expect(result.stdout.contains("no progress possible (stopped early: 1 photo left for later (analysing 6000x4000"), "\(result.stdout)")
        }
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect((report["counts"] as? [String: Any])?["discovered"] as? Int == 1, "\(status.stdout)")
    }

    /// Photos are deferred rather than analysed smaller, so the resident set (the
    /// guard's measure of use) must fall back after each photo. It did not: glibc kept the freed
    /// buffers and BlazeFace its idle ones, and under a limit that holds one analysis every photo
    /// after the first was deferred. Three large photos under such a limit, one slot: all analysed
    /// at their analysis scale.
    @Test func aLimitThatHoldsOneAnalysisAnalysesEveryPhotoAtItsScale() throws {
        let ws = try Workspace()
        for index in 0..<3 { try ws.addGrayPhoto("large\(index).jpg", width: 2400, height: 1800) }
        func mebibytes(after text: String, in output: String) throws -> Int {
            let tail = try #require(output.range(of: text), "no '\(text)' in: \(output)").upperBound
            return try #require(Int(output[tail...].prefix { $0.isNumber }), "\(output)")
        }
        // This binary's footprint at rest, and a photo's need, from runs that cannot analyse.
        let rest = try CLI.run(["analyze", ws.library, "--store", ws.store, "--memory-limit", "1M"])
        let footprint = try mebibytes(after: "this process's own footprint (", in: rest.stderr)
        let short = try CLI.run(["analyze", ws.library, "--store", ws.store, "--memory-limit", "\(footprint + 24 + 12)M", "--slots", "1"])
        let need = try mebibytes(after: "2400x1800 needs about ", in: short.stderr)
        let limit = footprint + 24 + need + 8
        let run = try CLI.run(["analyze", ws.library, "--store", ws.store, "--memory-limit", "\(limit)M", "--slots", "1"])
        #expect(run.status == 0, "under \(limit)M (footprint \(footprint), need \(need)): \(run.stderr)")
        let verdicts = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        #expect(verdicts.lines.count == 3)
        for line in verdicts.lines { #expect(line.contains("\"analysisSize\":{\"height\":900,\"width\":1200}"), "\(line)") }
    }

    @Test func signalStopsPromptlyWithWorkRemaining() throws {
        let ws = try Workspace()
        try ws.addSmallSamples(shortSide: 400, copies: 3)
        let run = try Running(["analyze", ws.library, "--store", ws.store, "--slots", "1"])
        // Once it has said what it will do, it is analysing.
        for _ in 0..<600 where !run.stderr.contains("to analyse") { usleep(50_000) }
        usleep(300_000)
        let sent = Date()
        run.signal(SIGTERM)
        let status = run.wait()
        #expect(status == 75)
        #expect(Date().timeIntervalSince(sent) < 8)  // in-flight work finishes or is abandoned
        #expect(run.stderr.contains("SIGTERM"))
    }
}

/// With stderr going to a log (not a terminal), progress comes as plain lines
/// now and then, never a silent run; `--json` keeps stdout and stderr free of them.
@Suite struct ProgressLogCLITests {
    @Test func aLogGetsPlainProgressLines() throws {
        let ws = try Workspace()
        _ = try ws.addSmallSamples(copies: 2)
        let logged = try CLI.run(["analyze", ws.library, "--store", ws.store, "--analysis-size", "96"],
                                 environment: ["PHOTODRAIN_PROGRESS_INTERVAL": "0.001"])
        #expect(logged.status == 0)
        let lines = logged.stderr.split(separator: "\n").filter { $0.hasPrefix("analysing: ") }
        #expect(lines.count >= 2, "\(logged.stderr)")
        #expect(!logged.stderr.contains("\r"), "a terminal's redraw went to a log")
        let json = try CLI.run(["analyze", ws.library, "--store", ws.store + ".json-run", "--analysis-size", "96", "--json"],
                               environment: ["PHOTODRAIN_PROGRESS_INTERVAL": "0.001"])
        #expect(json.status == 0)
        #expect(json.stdout.contains("\"event\":\"summary\"") || json.stdout.contains("summary"))
        #expect(!json.stderr.contains("analysing: "))
    }
}
