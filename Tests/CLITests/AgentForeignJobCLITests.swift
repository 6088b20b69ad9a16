import Foundation
import Testing

/// The agent sends only to the library's destination. Upload jobs are rows in the store, and the
/// agent hands each job's destination its token and a photo: a row naming another place (written
/// by something other than `wake`, or by a bug) must get neither.
@Suite(.serialized) struct AgentForeignJobCLITests {
    /// Rewrites every job's destination in the store, as something other than `wake` could.
    private func pointJobs(ofStore store: String, at destination: String) throws {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            print(db.execute("UPDATE upload_jobs SET destination = ?", (sys.argv[2],)).rowcount)
            db.commit()
            """, store, destination]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        python.waitUntilExit()
        let changed = Int(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(python.terminationStatus == 0 && changed > 0, "no job rewritten")
    }

    @Test func aJobNamingAnotherReceiverIsDroppedWithNoTokenOrPhotoSent() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let token = "agent-\(UUID().uuidString.prefix(12))"
        let tokenFile = ws.root.appendingPathComponent("token").path
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path, extra: ["--token-file", tokenFile])
        // Another working receiver: it would take whatever it is sent, and log the token it got.
        let collector = try ServeProcess(directory: ws.root.appendingPathComponent("collected").path)
        let fast = ["--analysis-size", "96"]

        var created = false
        for _ in 0..<3 where !created {
            let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url, "--json"] + fast)
            created = wake.stdout.contains("\"created\":") && !wake.stdout.contains("\"created\":0")
        }
        #expect(created, "wake created no upload jobs")
        try pointJobs(ofStore: ws.store, at: collector.url)

        let agent = try CLI.run(["agent", ws.library, "--store", ws.store, "--token-file", tokenFile, "--exit-when-idle", "1"])
        #expect(agent.status == 1, "\(agent.stdout)\(agent.stderr)")
        #expect(agent.stderr.contains("dropped unperformed"), "\(agent.stderr)")
        #expect(agent.stderr.contains(collector.url) && agent.stderr.contains(server.url), "\(agent.stderr)")
        #expect(try collector.objects().isEmpty)
        #expect(!collector.running.stdout.contains("POST") && !collector.running.stderr.contains("POST"),
                "the other receiver was sent: \(collector.running.stderr.suffix(400))")

        // The photos were charged nothing: the next wake makes jobs for the library's receiver,
        // and the agent uploads them there.
        let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url, "--json"] + fast)
        #expect(wake.stdout.contains("\"created\":") && !wake.stdout.contains("\"created\":0"), "\(wake.stdout)\(wake.stderr)")
        let again = try CLI.run(["agent", ws.library, "--store", ws.store, "--token-file", tokenFile, "--exit-when-idle", "1"])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("succeeded, 0 failed") && !again.stdout.contains(": 0 succeeded"), "\(again.stdout)")
        #expect(try collector.objects().isEmpty)
    }
}
