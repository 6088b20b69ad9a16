import Foundation
import Testing

/// Issue 16 item 6: `wake` exits 75 only when work is moving.
@Suite(.serialized) struct WakeCLITests {
    static let fast = ["--analysis-size", "96"]

    @Test func jobsWaitingWithNoAgentAreNoProgress() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let url = "http://127.0.0.1:9/uploads"
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + Self.fast).status == 0)
        let first = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url, "--json"] + Self.fast)
        #expect(first.status == 75 && first.stdout.contains("\"agentRunning\":false"), "\(first.stdout)")
        // status shows the jobs with the agent and that nothing is confirmed or moving yet.
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let transfer = try #require(report["transfer"] as? [String: Any])
        let total = try #require((report["counts"] as? [String: Any])?["total"] as? Int)
        #expect(transfer["jobsInFlight"] as? Int == total && transfer["bytesConfirmed"] as? Int == 0)
        #expect((transfer["bytesRemaining"] as? Int ?? 0) > 0 && transfer["etaSeconds"] == nil)
        let text = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(text.stdout.contains("jobs with the agent      \(total), 0 B of "), "\(text.stdout)")
        #expect(text.stdout.contains("time left                unknown: nothing uploaded in the last 10 minutes"))
        let idle = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url] + Self.fast)
        #expect(idle.status == 1, "\(idle.stdout)")
        #expect(idle.stdout.contains("no agent is running (start `photodrain agent"), "\(idle.stdout)")
        // With an agent running (it cannot reach port 9, so the jobs stay with it), wake says processing.
        let agent = try Running(["agent", ws.library, "--store", ws.store])
        defer { agent.signal(SIGTERM); agent.wait() }
        usleep(300_000)
        let busy = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url, "--json"] + Self.fast)
        #expect(busy.status == 75 && busy.stdout.contains("\"agentRunning\":true"), "\(busy.stdout)")
    }
}
