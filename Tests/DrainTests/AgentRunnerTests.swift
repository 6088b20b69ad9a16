import AssetStore
import Drain
import Foundation
import Synchronization
import Testing
import Transfer

/// The destinations an agent built (each is handed the agent's token and credentials).
final class BuiltDestinations: Sendable {
    let names = Mutex<[String]>([])
}

@Suite struct AgentRunnerTests {
    /// One analysed photo with a registered upload job to `destination`, as `wake` leaves it.
    /// `jobDestination` is what the job row names (the destination's own endpoint unless given);
    /// the library's destination is `destination`'s, as `wake` records it.
    private func libraryWithAJob(destination: ScriptedDestination, jobDestination: String? = nil) throws -> (Library, AssetStore, UploadJob) {
        let library = try Library(photos: 1)
        let store = try library.store()
        try store.useDestination(destination.endpoint, allowChange: false)
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 1) {
            _ = try store.bankVerdict(BankedVerdict(json: "{}", label: "no-faces", faceCount: 0, score: 0), for: asset)
        }
        let claimed = try #require(try store.claimForUpload(limit: 1).first)
        let job = try #require(try store.createJob(for: claimed, destination: jobDestination ?? destination.endpoint, inflightLimit: .max))
        return (library, store, job)
    }

    private func runAgent(_ store: AssetStore, destination: ScriptedDestination, built: BuiltDestinations? = nil) async throws -> [AgentEvent] {
        var options = AgentOptions(slots: 1) { (named: String) throws(TransferError) -> any UploadDestination in
            built?.names.withLock { $0.append(named) }
            return destination
        }
        options.exitWhenIdleFor = .seconds(1)
        options.probeInterval = .milliseconds(50)
        let events = Mutex<[AgentEvent]>([])
        _ = try await AgentRunner(store: store, options: options).run { event in events.withLock { $0.append(event) } }
        return events.withLock { $0 }
    }

    /// A destination that is away (connections lost, reachability checks too) for a while: the
    /// agent puts the job back each time, uncharged, pauses 50, 100, 200 ms, and uploads once it
    /// answers; `wake`'s acknowledgement then finds a photo uploaded with no attempt counted.
    @Test func aDestinationAwayCostsThePhotoNothingAndTheAgentBacksOff() async throws {
        let destination = ScriptedDestination(uploads: [], awayForChecks: 3)
        let (library, store, job) = try libraryWithAJob(destination: destination)
        defer { withExtendedLifetime(library) {} }
        let events = try await runAgent(store, destination: destination)

        let away = events.compactMap { event -> Duration? in
            if case .destinationAway(_, _, let pause) = event { return pause }
            return nil
        }
        #expect(away == [.milliseconds(50), .milliseconds(100), .milliseconds(200)])
        let finished = try #require(try store.job(id: job.id))
        #expect(finished.state == .succeeded)
        let calls = destination.uploadCalls.withLock { $0 }
        #expect(calls.count == 4)
        let gaps = zip(calls.dropFirst(), calls).map { $0 - $1 }
        for (gap, least) in zip(gaps, [50, 100, 200]) { #expect(gap >= .milliseconds(least)) }  // lower bounds only
        _ = try store.acknowledgeJob(finished) { job, asset in RetryPolicy().update(for: job, asset: asset) }
        let asset = try #require(try store.asset(path: "p000.jpg"))
        #expect(asset.uploadedAt != nil && asset.attempts == 0 && !asset.failed)
    }

    /// A store whose photo table is damaged made every job a deferral, and the
    /// agent idled out with exit 0, for ever. A store that cannot be read stops it with the
    /// error (the CLI exits 1), and nothing is sent.
    @Test func aDamagedStoreStopsTheAgentWithTheError() async throws {
        let destination = ScriptedDestination(uploads: [])
        let library: Library
        do {
            let (made, store, _) = try libraryWithAJob(destination: destination)
            library = made
            withExtendedLifetime(store) {}
        }
        try DamagedStore.damage(table: "assets", inStoreAt: library.root.appendingPathComponent("store.sqlite").path)
        let store = try library.store()
        do {
            _ = try await runAgent(store, destination: destination)
            Issue.record("the agent ran on a damaged store without an error")
        } catch let error as StoreError {
            #expect(error.code == .corrupted)
            #expect(!error.description.contains("SELECT") && !error.description.contains("\n"))
        }
        #expect(destination.uploadCalls.withLock { $0.count } == 0)
    }

    /// The agent's upload refused with 401 (a wrong token) is not the photo's failure: a wrong
    /// setting must not use up a photo's attempts. `wake` puts the job back uncharged and reports
    /// the refusal (the CLI exits 1), instead of acknowledging it and failing the photo for good.
    /// A server certificate that fails verification (a home server's self-signed one) is such a
    /// refusal too.
    @Test(arguments: [TransferError.forStatus(401, creation: true), TransferError.forStatus(404, creation: true),
                      DrainRunnerTests.certificateUnverified])
    func aRefusedJobIsPutBackUnchargedByWake(refusal: TransferError) async throws {
        let destination = ScriptedDestination(uploads: [refusal])
        let (library, store, job) = try libraryWithAJob(destination: destination)
        defer { withExtendedLifetime(library) {} }
        _ = try await runAgent(store, destination: destination)
        #expect(try store.job(id: job.id)?.state == .failed)
        let report = try await WakeRunner(store: store, analyzer: CountingAnalyzer(), memory: MemoryGuard(),
                                    options: WakeOptions(destination: destination.endpoint)).runOnOwnThread()
        #expect(report.refused?.hasPrefix(refusal.code.rawValue) == true)
        #expect(report.acknowledged == 0)
        let asset = try #require(try store.asset(path: "p000.jpg"))
        #expect(asset.attempts == 0 && !asset.failed && asset.uploadedAt == nil)
        #expect(try store.job(id: job.id)?.state == .registered)
        #expect(try store.counts().failed == 0)
    }

    /// A job row that names another place than the library's destination (a store written by
    /// something else, a bug) is dropped before any destination is built for it: the agent's
    /// token and the photo never go there, the photo is charged nothing, and the next wake makes
    /// it a job for the library's destination.
    @Test func aJobNamingAnotherDestinationGetsNoTokenAndNoPhoto() async throws {
        let destination = ScriptedDestination(uploads: [])
        let elsewhere = "http://collector.example:8080/uploads"
        let (library, store, job) = try libraryWithAJob(destination: destination, jobDestination: elsewhere)
        defer { withExtendedLifetime(library) {} }
        let built = BuiltDestinations()
        let events = try await runAgent(store, destination: destination, built: built)

        #expect(built.names.withLock { $0 }.isEmpty)
        #expect(destination.uploadCalls.withLock { $0.count } == 0)
        let refused = events.compactMap { event -> String? in
            if case .refusedJob(let id, let message) = event, id == job.id { return message }
            return nil
        }
        #expect(refused.count == 1)
        #expect(refused.first.map { $0.contains("collector.example:8080") && $0.contains(destination.endpoint) } == true)
        #expect(try store.job(id: job.id) == nil)
        let asset = try #require(try store.asset(path: "p000.jpg"))
        #expect(asset.uploadedAt == nil && asset.attempts == 0 && !asset.failed)

        _ = try await WakeRunner(store: store, analyzer: CountingAnalyzer(), memory: MemoryGuard(),
                           options: WakeOptions(destination: destination.endpoint)).runOnOwnThread()
        let remade = try store.claimJobsToPerform(limit: 10)
        #expect(remade.map(\.destination) == [AssetStore.destinationKey(destination.endpoint)])
    }

    @Test func aJobNamingTheLibrarysDestinationInAnotherSpellingIsPerformed() async throws {
        let destination = ScriptedDestination(uploads: [])
        let spelled = destination.endpoint.replacingOccurrences(of: "scripted", with: "SCRIPTED") + "/"
        let (library, store, job) = try libraryWithAJob(destination: destination, jobDestination: spelled)
        defer { withExtendedLifetime(library) {} }
        _ = try await runAgent(store, destination: destination)
        #expect(try store.job(id: job.id)?.state == .succeeded)
        #expect(destination.uploadCalls.withLock { $0.count } == 1)
    }

    /// A destination that answers with an error is the photo's failure: the job ends failed, for
    /// `wake` to count and retry, and nothing is deferred.
    @Test func aDestinationThatAnswersWithAnErrorFailsTheJob() async throws {
        let destination = ScriptedDestination(uploads: [TransferError.forStatus(503)])
        let (library, store, job) = try libraryWithAJob(destination: destination)
        defer { withExtendedLifetime(library) {} }
        let events = try await runAgent(store, destination: destination)

        #expect(!events.contains { if case .destinationAway = $0 { true } else { false } })
        let failed = try #require(try store.job(id: job.id))
        #expect(failed.state == .failed)
        #expect(failed.failure?.code == TransferError.Code.serverError.rawValue && failed.failure?.transient == true)
        #expect(destination.uploadCalls.withLock { $0.count } == 1)
    }

    /// A failed upload keeps its response's headers on the job, like a success; its `Retry-After`
    /// defers the retry: the next wake leaves the job failed (neither retried nor acknowledged),
    /// and a wake after the time retries it.
    @Test func retryAfterOnAFailedJobDefersItsRetry() async throws {
        let headers = ["retry-after": "60", "x-request-id": "req-7"]
        let destination = ScriptedDestination(uploads: [TransferError.forStatus(503, headers: headers)])
        let (library, store, job) = try libraryWithAJob(destination: destination)
        defer { withExtendedLifetime(library) {} }
        let before = Date()
        _ = try await runAgent(store, destination: destination)
        let after = Date()
        let failed = try #require(try store.job(id: job.id))
        #expect(failed.state == .failed && failed.responseStatus == 503 && failed.responseHeaders == headers)
        // 60 s from when the failure was recorded, some time during the agent's run.
        let notBefore = try #require(failed.retryNotBefore)
        #expect(notBefore.timeIntervalSince(before) >= 59.9 && notBefore.timeIntervalSince(after) <= 60.1)

        var options = WakeOptions(destination: destination.endpoint)
        let early = try await WakeRunner(store: store, analyzer: CountingAnalyzer(), memory: MemoryGuard(), options: options).runOnOwnThread()
        #expect(early.retried == 0 && early.acknowledged == 0 && early.workRemains)
        #expect(early.retriesDeferred == 1 && early.nextRetryAt == notBefore)
        // The retry will need an agent too: with none running, the wait is not progress.
        #expect(!early.agentRunning && !early.progressing)
        #expect(try store.job(id: job.id)?.state == .failed)
        #expect(try store.asset(path: "p000.jpg")?.attempts == 0)

        options.clock = { notBefore.addingTimeInterval(1) }
        let later = try await WakeRunner(store: store, analyzer: CountingAnalyzer(), memory: MemoryGuard(), options: options).runOnOwnThread()
        #expect(later.retried == 1 && later.retriesDeferred == 0 && later.nextRetryAt == nil)
        // The failed job was replaced by its retry, registered for the agent.
        #expect(try store.jobs(for: .acknowledge).isEmpty)
        #expect(try store.jobs(for: .process).map(\.state) == [.registered])
        #expect(try store.asset(path: "p000.jpg")?.attempts == 1)
    }
}
