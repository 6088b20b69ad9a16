import AssetStore
import Foundation
import Testing

/// `wake` exits 75 only when work is moving.
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
        #expect(text.stdout.contains("upload jobs open         \(total), 0 B of "), "\(text.stdout)")
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

    /// `--runtime-limit` holds during the analysis page too. With a limit far
    /// shorter than the page takes, wake stops admitting photos, says why, and exits 75 (it made
    /// progress or was interrupted, and work remains); it does not analyse the whole page.
    @Test func theRuntimeLimitStopsTheAnalysisPage() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples(copies: 3)
        let url = "http://127.0.0.1:9/uploads"
        let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url, "--runtime-limit", "0.01", "--json"] + Self.fast)
        #expect(wake.status == 75, "\(wake.stdout)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(wake.stdout.utf8)) as? [String: Any])
        let analysed = try #require(report["analysed"] as? Int)
        #expect(analysed < photos.count, "analysed \(analysed) of \(photos.count) after a 0.01 s limit")
        #expect(report["bailed"] as? String == "runtime limit reached" && report["workRemains"] as? Bool == true)
    }

    /// A job failed with `Retry-After: 120`: wake neither retries nor acknowledges it and says
    /// when it may; status shows the wait.
    @Test func aRetryAfterWaitIsReportedByWakeAndStatus() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let url = "http://127.0.0.1:9/uploads"
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + Self.fast).status == 0)
        #expect(try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url] + Self.fast).status == 75)
        do {
            let store = try AssetStore(root: ws.library, path: ws.store)
            let job = try #require(try store.claimJobsToPerform(limit: 1).first)
            #expect(try store.finishJob(job, result: .failed(status: 429, headers: ["retry-after": "120"], failure: UploadJob.Failure(
                domain: "transfer", code: "rate-limited", message: "the server asked to slow down", transient: true),
                retryNotBefore: Date().addingTimeInterval(120))))
        }
        let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url, "--json"] + Self.fast)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(wake.stdout.utf8)) as? [String: Any])
        #expect(report["retriesDeferred"] as? Int == 1 && report["nextRetryAt"] is String, "\(wake.stdout)")
        #expect(report["retried"] as? Int == 0 && report["acknowledged"] as? Int == 0)
        let text = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url] + Self.fast)
        #expect(text.stdout.contains("1 retry waits for the server's Retry-After (until "), "\(text.stdout)")
        let status = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(status.stdout.contains("retries waiting          1 for the server's Retry-After (the first in "), "\(status.stdout)")
    }

    /// A library of one photo whose upload job (made by wake for `url`) failed with a 429 and
    /// `Retry-After: seconds`, as if the agent had tried it.
    private static func oneJobWaitingForRetryAfter(_ ws: Workspace, url: String, seconds: Int) throws {
        try ws.write("one.jpg", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg")))))
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + Self.fast).status == 0)
        #expect(try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url] + Self.fast).status == 75)
        let store = try AssetStore(root: ws.library, path: ws.store)
        let job = try #require(try store.claimJobsToPerform(limit: 1).first)
        #expect(try store.finishJob(job, result: .failed(status: 429, headers: ["retry-after": String(seconds)], failure: UploadJob.Failure(
            domain: "transfer", code: "rate-limited", message: "the server asked to slow down", transient: true),
            retryNotBefore: Date().addingTimeInterval(Double(seconds)))))
    }

    /// When every open job waits for the server's Retry-After, wake says work
    /// remains (75), not "no agent is running" (1).
    @Test func jobsWaitingForRetryAfterAreWorkRemainingNotAFailure() throws {
        let ws = try Workspace()
        let url = "http://127.0.0.1:9/uploads"
        try Self.oneJobWaitingForRetryAfter(ws, url: url, seconds: 120)
        let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", url] + Self.fast)
        #expect(wake.status == 75, "\(wake.stdout)\(wake.stderr)")
        #expect(wake.stdout.contains("waiting for the server's Retry-After"), "\(wake.stdout)")
    }

    /// The old server's Retry-After does not hold back a move to another server.
    @Test func anotherDestinationIsNotHeldByTheOldOnesRetryAfter() throws {
        let ws = try Workspace()
        let old = "http://127.0.0.1:9/uploads", new = "http://127.0.0.1:7/uploads"
        try Self.oneJobWaitingForRetryAfter(ws, url: old, seconds: 3600)
        let moved = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", new, "--json"] + Self.fast)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(moved.stdout.utf8)) as? [String: Any], "\(moved.stdout)\(moved.stderr)")
        #expect(report["retriesDeferred"] as? Int == 0, "\(moved.stdout)")
        #expect(report["created"] as? Int == 1, "\(moved.stdout)")
        let store = try AssetStore(root: ws.library, path: ws.store)
        #expect(try store.jobs(for: .process).map(\.destination) == [new])
    }
}
