import AssetStore
import Foundation
import Synchronization
import Testing
import Transfer
@testable import Drain

/// `wake --feed-agent`: the installed service's wake keeps a running agent's queue full for its
/// whole runtime limit, instead of handing over one inflight limit's worth of jobs per timer tick
/// (40 photos per 5 minutes: 480 an hour, whatever the network).
@Suite struct WakeFeedingTests {
    /// Runs one wake with `configure`d options while an agent performs its jobs on `destination`;
    /// returns the wake's report once it ends, the agent stopped after it.
    private func wakeBesideAnAgent(photos: Int, configure: (inout WakeOptions) -> Void)
        async throws -> (WakeReport, AssetStore, Library, ScriptedDestination) {
        let library = try Library(photos: photos)
        let store = try library.store()
        let destination = ScriptedDestination(uploads: [])
        try store.useDestination(destination.endpoint, allowChange: false)
        var agentOptions = AgentOptions(slots: 3) { (_: String) throws(TransferError) -> any UploadDestination in destination }
        agentOptions.pollInterval = .milliseconds(20)
        let agent = AgentRunner(store: store, options: agentOptions)
        let agentTask = Task { try await agent.run() }
        // The agent announces itself before it claims anything; wake must see it running.
        for _ in 0..<200 where !store.isAgentRunning() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(store.isAgentRunning())

        var options = WakeOptions(destination: destination.endpoint)
        options.inflightLimit = 2
        options.pageSize = 3
        configure(&options)
        let wake = WakeRunner(store: store, analyzer: CountingAnalyzer(), memory: WakeRunnerTests.roomy, options: options)
        let report = try await wake.runOnOwnThread()
        agent.stop(reason: "test over")
        _ = try await agentTask.value
        return (report, store, library, destination)
    }

    /// One wake with --feed-agent moves the whole library past an agent, two jobs at a time, and
    /// ends as soon as nothing remains (long before its runtime limit): every photo analysed,
    /// uploaded once, acknowledged.
    @Test func oneFeedingWakeMovesTheWholeLibrary() async throws {
        let started = ContinuousClock.now
        let (report, store, library, destination) = try await wakeBesideAnAgent(photos: 12) { options in
            options.feedAgent = true
            options.runtimeLimit = .seconds(120)
        }
        defer { withExtendedLifetime(library) {} }
        #expect(!report.workRemains, "\(report)")
        #expect(report.analysed == 12 && report.created == 12 && report.acknowledged == 12, "\(report)")
        #expect(ContinuousClock.now - started < .seconds(100))  // ended on "nothing remains", not the limit
        let counts = try store.counts()
        #expect(counts.uploaded == 12)
        #expect(destination.uploadCalls.withLock { $0.count } == 12)
    }

    /// Without it, one pass as before: a page analysed and at most the inflight limit handed over.
    @Test func withoutItWakeIsOnePass() async throws {
        let (report, store, library, _) = try await wakeBesideAnAgent(photos: 12) { options in
            options.runtimeLimit = .seconds(120)
        }
        defer { withExtendedLifetime(library) {} }
        #expect(report.workRemains)
        #expect(report.analysed == 3 && report.created == 0, "\(report)")
        #expect(try store.counts().uploaded == 0)
    }

    /// The runtime limit still bounds it: with an agent that never finishes a job (the
    /// destination is away and stays away), wake stops at the limit and reports work remaining.
    @Test func theRuntimeLimitStillEndsAFeedingWake() async throws {
        let started = ContinuousClock.now
        let (report, _, library, _) = try await wakeBesideAnAgentThatIsStuck(photos: 6)
        defer { withExtendedLifetime(library) {} }
        #expect(report.workRemains && report.interrupted, "\(report)")
        #expect(report.bailed == "runtime limit reached")
        #expect(ContinuousClock.now - started >= .seconds(1))
    }

    private func wakeBesideAnAgentThatIsStuck(photos: Int) async throws -> (WakeReport, AssetStore, Library, ScriptedDestination) {
        let library = try Library(photos: photos)
        let store = try library.store()
        let destination = ScriptedDestination(uploads: [], awayForChecks: .max)
        try store.useDestination(destination.endpoint, allowChange: false)
        var agentOptions = AgentOptions(slots: 3) { (_: String) throws(TransferError) -> any UploadDestination in destination }
        agentOptions.probeInterval = .milliseconds(50)
        agentOptions.maxProbeInterval = .milliseconds(200)
        let agent = AgentRunner(store: store, options: agentOptions)
        let agentTask = Task { try await agent.run() }
        for _ in 0..<200 where !store.isAgentRunning() { try await Task.sleep(for: .milliseconds(10)) }
        var options = WakeOptions(destination: destination.endpoint)
        options.inflightLimit = 2
        options.feedAgent = true
        options.runtimeLimit = .seconds(1)
        let wake = WakeRunner(store: store, analyzer: CountingAnalyzer(), memory: WakeRunnerTests.roomy, options: options)
        let report = try await wake.runOnOwnThread()
        agent.stop(reason: "test over")
        _ = try await agentTask.value
        return (report, store, library, destination)
    }
}
