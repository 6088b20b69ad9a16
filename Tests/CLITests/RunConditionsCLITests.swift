import Foundation
import Testing

/// Runners wait (exit 75, nothing charged) for the conditions asked for, and status shows the
/// last wait; agent and drain, already running, pause and go on as the conditions change. The
/// probes are given through PHOTODRAIN_POWER_SUPPLY_DIR (a folder, rewritten mid-run) and
/// PHOTODRAIN_NETWORK_METERED (yes, no, or a file saying so, rewritten mid-run).
@Suite(.serialized) struct RunConditionsCLITests {
    static let fast = ["--analysis-size", "96"]

    private func battery(_ ws: Workspace) throws -> String {
        let root = ws.root.appendingPathComponent("power").path
        try FileManager.default.createDirectory(atPath: root + "/BAT0", withIntermediateDirectories: true)
        try Data("Battery\n".utf8).write(to: URL(fileURLWithPath: root + "/BAT0/type"))
        try Data("Discharging\n".utf8).write(to: URL(fileURLWithPath: root + "/BAT0/status"))
        return root
    }

    @Test func onBatteryTheRunWaitsAndStatusSaysWhy() throws {
        let ws = try Workspace()
        _ = try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let power = ["PHOTODRAIN_POWER_SUPPLY_DIR": try battery(ws)]
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--on-battery", "defer"] + Self.fast,
                                environment: power)
        #expect(drain.status == 75)
        #expect(drain.stderr.contains("running on battery"), "\(drain.stderr)")
        #expect(try server.objects().isEmpty)
        let status = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(status.stdout.contains("last wait"), "\(status.stdout)")
        #expect(status.stdout.contains("running on battery"))
        // Allowed on battery (the default), the same run goes ahead.
        #expect(try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url] + Self.fast, environment: power).status == 0)
    }

    @Test func onAMeteredNetworkUploadsWaitOrOnlySmallFilesGo() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        var big = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("three-portraits.jpg"))))
        big += [UInt8](repeating: 0, count: 200_000)
        try ws.write("big.jpg", bytes: big)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let metered = ["PHOTODRAIN_NETWORK_METERED": "yes"]
        let waiting = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--network", "unmetered"] + Self.fast,
                                  environment: metered)
        #expect(waiting.status == 75)
        #expect(waiting.stderr.contains("the network is metered"), "\(waiting.stderr)")
        #expect(try server.objects().isEmpty)
        let limited = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--metered-file-limit", "150K"] + Self.fast,
                                  environment: metered)
        #expect(limited.status == 75, "\(limited.stderr)")
        #expect(limited.stderr.contains("1 photo larger than"), "\(limited.stderr)")
        #expect(try server.objects().count == photos.count)
        // Unmetered again: the large one goes too.
        let free = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--metered-file-limit", "150K"] + Self.fast,
                               environment: ["PHOTODRAIN_NETWORK_METERED": "no"])
        #expect(free.status == 0, "\(free.stderr)")
        #expect(try server.objects().count == photos.count + 1)
    }

    /// A power supply folder laid out as /sys/class/power_supply: a laptop on mains, or on battery.
    private func setPower(_ root: String, onBattery: Bool) throws {
        for supply in ["AC", "BAT0"] { try FileManager.default.createDirectory(atPath: root + "/" + supply, withIntermediateDirectories: true) }
        func write(_ file: String, _ value: String) throws {
            // Replaced whole (a rename), as the kernel's files never read half written.
            let temporary = root + "/.\(UUID().uuidString)"
            try Data((value + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, root + "/" + file) == 0 else { throw CocoaError(.fileWriteUnknown) }
        }
        try write("AC/type", "Mains")
        try write("AC/online", onBattery ? "0" : "1")
        try write("BAT0/type", "Battery")
        try write("BAT0/status", onBattery ? "Discharging" : "Charging")
    }

    private func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(100_000)
        }
        return try condition()
    }

    /// The agent, already running, re-checks the conditions: the machine going on battery stops
    /// it taking jobs within 10 s (nothing more reaches the receiver), and mains power back, the
    /// uploads go on to the last photo. A real `serve`, the jobs made by `wake`.
    @Test func theAgentPausesOnBatteryWhileRunningAndGoesOnWhenPluggedIn() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples(copies: 2)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let power = ws.root.appendingPathComponent("power").path
        try setPower(power, onBattery: false)
        let environment = ["PHOTODRAIN_POWER_SUPPLY_DIR": power]
        var jobs = 0
        for _ in 0..<4 where jobs < photos.count {
            let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url, "--json"] + Self.fast)
            if let range = wake.stdout.range(of: #""created":(\d+)"#, options: .regularExpression) {
                jobs += Int(wake.stdout[range].split(separator: ":").last ?? "") ?? 0
            }
        }
        #expect(jobs == photos.count, "wake made \(jobs) jobs for \(photos.count) photos")

        // One upload at a time, each slowed to about half a second.
        let agent = try Running(["agent", ws.library, "--store", ws.store, "--on-battery", "defer", "--slots", "1",
                                 "--bwlimit", "10K", "--json"], environment: environment)
        defer { if agent.process.isRunning { agent.signal(SIGKILL) } }
        #expect(agent.waitForOutput(containing: "\"succeeded\""), "\(agent.stderr)")
        try setPower(power, onBattery: true)
        let unplugged = Date()
        #expect(agent.waitForOutput(containing: "\"conditions\":\"wait\"", seconds: 10), "\(agent.stdout)\(agent.stderr)")
        #expect(Date().timeIntervalSince(unplugged) <= 10)
        // The upload in flight (a small one) may finish; after that nothing reaches the receiver.
        usleep(1_500_000)
        let held = try server.objects().count
        usleep(5_000_000)
        #expect(try server.objects().count == held)
        #expect(held < photos.count, "every photo went before the agent saw the battery")
        let status = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(status.stdout.contains("running on battery"), "\(status.stdout)")

        try setPower(power, onBattery: false)
        #expect(agent.waitForOutput(containing: "\"conditions\":\"clear\"", seconds: 10), "\(agent.stdout)\(agent.stderr)")
        #expect(try waitUntil(seconds: 60) { try server.objects().count == photos.count }, "\(agent.stdout)\(agent.stderr)")
        agent.signal(SIGTERM)
        #expect(agent.wait() == 0, "\(agent.stderr)")
        #expect(!agent.stdout.contains("\"failed\""), "\(agent.stdout)")
    }

    /// `drain --watch`, already running, re-checks the network: turned metered, the large upload
    /// in flight is cancelled (the receiver gets no more of it), photos copied in meanwhile are
    /// analysed but not sent; unmetered again, everything goes, the large one resumed from the
    /// receiver's offset, not started over. The network's cost comes from a file the test rewrites.
    @Test func aWatchingDrainHoldsUploadsOnAMeteredNetworkAndResumesThem() throws {
        let ws = try Workspace()
        var big = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("three-portraits.jpg"))))
        big += [UInt8](repeating: 7, count: 6_000_000)
        try ws.write("big.jpg", bytes: big)
        let storage = ws.root.appendingPathComponent("received").path
        let server = try ServeProcess(directory: storage)
        let metered = ws.root.appendingPathComponent("metered").path
        func network(_ answer: String) throws { try Data((answer + "\n").utf8).write(to: URL(fileURLWithPath: metered), options: .atomic) }
        try network("no")
        let drain = try Running(["drain", ws.library, "--store", ws.store, "--to", server.url, "--watch", "--network", "unmetered",
                                 "--bwlimit", "1M", "--json"] + Self.fast, environment: ["PHOTODRAIN_NETWORK_METERED": metered])
        defer { if drain.process.isRunning { drain.signal(SIGKILL) } }
        #expect(try waitUntil(seconds: 30) { UploadResumeCLITests.partialBytes(in: storage + "/uploads") > 500_000 },
                "the large upload never got going: \(drain.stdout)\(drain.stderr)")
        try network("yes")
        #expect(drain.waitForOutput(containing: "\"event\":\"conditions-wait\"", seconds: 10), "\(drain.stdout)\(drain.stderr)")
        usleep(1_000_000)
        let held = UploadResumeCLITests.partialBytes(in: storage + "/uploads")
        // Photos copied in while the network is metered are analysed, not sent.
        let photos = try ws.addSmallSamples()
        #expect(try waitUntil(seconds: 30) { drain.stdout.components(separatedBy: "\"event\":\"analysed\"").count - 1 == photos.count + 1 },
                "\(drain.stdout)\(drain.stderr)")
        #expect(UploadResumeCLITests.partialBytes(in: storage + "/uploads") == held, "the large upload went on")
        #expect(held < big.count)
        #expect(try server.objects().isEmpty && !drain.stdout.contains("\"event\":\"uploaded\""), "\(drain.stdout)")

        try network("no")
        #expect(drain.waitForOutput(containing: "\"event\":\"conditions-clear\"", seconds: 10), "\(drain.stdout)\(drain.stderr)")
        #expect(try waitUntil(seconds: 60) { try server.objects().count == photos.count + 1 }, "\(drain.stdout)\(drain.stderr)")
        drain.signal(SIGTERM)
        #expect(drain.wait() == 0, "\(drain.stderr)")
        let objects = try server.objects()
        #expect(objects.contains { $0["size"] as? Int == big.count })
        // The large one was resumed: its offset asked for, no second upload created for it.
        #expect(server.running.stderr.contains("HEAD /uploads/"), "receiver log: \(server.running.stderr.suffix(800))")
        let creations = server.running.stderr.split(separator: "\n").filter { $0.hasPrefix("POST /uploads ") }
        #expect(creations.count == photos.count + 1, "an upload was started over: \(creations.count) created")
    }

    /// A bounded wake (as its unit runs it, started again 2 s after each 75) that finds the
    /// machine on battery waits its runtime limit for mains power instead of exiting at once,
    /// and goes on when it is plugged in meanwhile.
    @Test func aBoundedWakeWaitsItsRuntimeLimitForTheConditions() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let power = ws.root.appendingPathComponent("power").path
        try setPower(power, onBattery: true)
        let environment = ["PHOTODRAIN_POWER_SUPPLY_DIR": power]
        let wake = ["wake", ws.library, "--store", ws.store, "--to", server.url, "--on-battery", "defer", "--json"] + Self.fast
        let started = Date()
        let waited = try CLI.run(wake + ["--runtime-limit", "3"], environment: environment)
        #expect(waited.status == 75, "\(waited.stderr)")
        #expect(Date().timeIntervalSince(started) >= 2.9, "it did not wait for the conditions")
        #expect(waited.stderr.contains("running on battery") && !waited.stdout.contains("\"analysed\""), "\(waited.stdout)\(waited.stderr)")

        let plugged = try Running(wake + ["--runtime-limit", "30"], environment: environment)
        defer { if plugged.process.isRunning { plugged.signal(SIGKILL) } }
        #expect(plugged.waitForError(containing: "running on battery"))
        try setPower(power, onBattery: false)
        #expect(plugged.waitForError(containing: "going on", seconds: 10), "\(plugged.stderr)")
        _ = plugged.wait()
        #expect(plugged.stdout.contains("\"analysed\""), "\(plugged.stdout)\(plugged.stderr)")
    }

    /// `--priority idle`: the process runs with SCHED_IDLE and the idle I/O class.
    @Test func idlePriorityIsSetOnTheProcess() throws {
        let ws = try Workspace()
        _ = try ws.addSmallSamples()
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + Self.fast).status == 0)
        let agent = try Running(["agent", ws.library, "--store", ws.store, "--priority", "idle", "--exit-when-idle", "3"])
        usleep(1_000_000)
        let stat = try String(contentsOfFile: "/proc/\(agent.process.processIdentifier)/stat", encoding: .utf8)
        // Field 41 (policy), counted after the command name's closing parenthesis.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        #expect(fields.count > 38 && fields[38] == "5", "policy field: \(fields.count > 38 ? String(fields[38]) : "?") (SCHED_IDLE is 5)")
        let ionice = Process()
        let pipe = Pipe()
        ionice.executableURL = URL(fileURLWithPath: "/usr/bin/ionice")
        ionice.arguments = ["-p", String(agent.process.processIdentifier)]
        ionice.standardOutput = pipe
        try ionice.run()
        ionice.waitUntilExit()
        #expect(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).hasPrefix("idle"))
        _ = agent.wait()
    }
}
