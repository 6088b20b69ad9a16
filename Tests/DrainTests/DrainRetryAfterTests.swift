import AssetStore
import Foundation
import Synchronization
import Testing
import Transfer
@testable import Drain

/// `drain` honours a destination's `Retry-After` (on a 429 or 503): uploads
/// pause that long and the photo is tried again, counted as the retry policy says; an ask longer
/// than `retryAfterLimit` ends the drain with `retryLater` and charges the photo nothing.
@Suite struct DrainRetryAfterTests {
    static func busy(retryAfter seconds: Int, status: Int = 503) -> TransferError {
        TransferError.forStatus(status, headers: ["retry-after": String(seconds)])
    }

    private func drain(_ store: AssetStore, destination: ScriptedDestination,
                       configure: (inout DrainOptions) -> Void = { _ in }) async -> DrainOutcome {
        var options = DrainOptions(destination: destination)
        options.slots = 1
        options.probeInterval = .milliseconds(50)
        options.retryBackoff = .milliseconds(50)
        options.rescanInterval = nil
        configure(&options)
        return await DrainRunner(store: store, analyzer: CountingAnalyzer(), options: options).run { _ in }
    }

    @Test(arguments: [503, 429])
    func aShortRetryAfterIsWaitedForThenTheUploadSucceeds(status: Int) async throws {
        let library = try Library(photos: 1)
        defer { withExtendedLifetime(library) {} }
        let store = try library.store()
        let destination = ScriptedDestination(uploads: [Self.busy(retryAfter: 1, status: status)])
        let outcome = await drain(store, destination: destination)
        #expect(outcome == .finished)
        let asset = try #require(try store.asset(path: "p000.jpg"))
        #expect(asset.uploadedAt != nil && !asset.failed)
        // One counted failure, as the retry policy says of a 503/429; the wait itself is free.
        #expect(asset.attempts == 1)
        let calls = destination.uploadCalls.withLock { $0 }
        #expect(calls.count == 2)
        if calls.count == 2 {
            // Retry-After: 1 is honoured, not the 50 ms backoff.
            #expect(calls[1] - calls[0] >= .milliseconds(950), "retried after \(calls[1] - calls[0])")
        }
    }

    @Test func aRetryAfterLongerThanTheLimitEndsTheDrainAndChargesNothing() async throws {
        let library = try Library(photos: 2)
        defer { withExtendedLifetime(library) {} }
        let store = try library.store()
        let destination = ScriptedDestination(uploads: [Self.busy(retryAfter: 3600)])
        let started = Date()
        let outcome = await drain(store, destination: destination) { $0.retryAfterLimit = .seconds(2) }
        guard case .retryLater(let until) = outcome else {
            Issue.record("the drain ended \(outcome), not retryLater")
            return
        }
        #expect(until.timeIntervalSince(started) > 3500 && until.timeIntervalSince(started) < 3700)
        // It stopped rather than wait for the hour asked (no speed target: a loaded machine took 31 s).
        #expect(Date().timeIntervalSince(started) < 1800, "the drain waited instead of stopping")
        // Analysis went on; the photo that was refused for now is charged nothing, and uploads
        // stopped when the server asked to wait (the second photo was not sent either).
        #expect(try store.counts().discovered == 0)
        #expect(try store.counts().failed == 0)
        for asset in try store.assets() { #expect(asset.attempts == 0 && !asset.failed && asset.uploadedAt == nil) }
        #expect(destination.uploadCalls.withLock { $0.count } == 1)
        // Status sees the retry waiting, and when it is due.
        let progress = try store.transferProgress()
        #expect(progress.retriesWaiting == 1)
        #expect((progress.retryWaitSeconds ?? 0) > 3500)

        // The next drain, before the retry is due, sends nothing and stops the same way.
        let again = ScriptedDestination(uploads: [])
        let second = await drain(store, destination: again) { $0.retryAfterLimit = .seconds(2) }
        #expect(second == .retryLater(until: until))
        #expect(again.uploadCalls.withLock { $0.count } == 0)
        #expect(try store.asset(path: "p000.jpg")?.attempts == 0)
    }

    /// With a limit that covers the ask, a later drain waits for a retry an earlier run left
    /// (a job that failed with Retry-After: 2, made here as a killed drain would leave it).
    @Test func aRetryLeftWaitingByAnEarlierRunIsWaitedForWithinTheLimit() async throws {
        let library = try Library(photos: 1)
        defer { withExtendedLifetime(library) {} }
        let store = try library.store()
        _ = try store.scan()
        let destination = ScriptedDestination(uploads: [])
        for asset in try store.claimUnanalyzed(limit: 1) {
            _ = try store.bankVerdict(BankedVerdict(json: "{}", label: "no-faces", faceCount: 0, score: 0), for: asset)
        }
        let asset = try #require(try store.claimForUpload(limit: 1).first)
        _ = try store.createJob(for: asset, destination: destination.endpoint, inflightLimit: .max)
        let job = try #require(try store.claimJobsToPerform(limit: 1).first)
        let busy = Self.busy(retryAfter: 2)
        let failure = UploadJob.Failure(domain: TransferError.domain, code: busy.code.rawValue, message: busy.message, transient: true)
        #expect(try store.finishJob(job, result: .failed(status: 503, headers: busy.responseHeaders, failure: failure,
                                                         retryNotBefore: busy.retryNotBefore(now: Date()))))
        try store.releaseClaims()
        let notBefore = try #require(try store.job(id: job.id)?.retryNotBefore)

        let outcome = await drain(store, destination: destination) { $0.retryAfterLimit = .seconds(10) }
        #expect(outcome == .finished)
        let row = try #require(try store.asset(path: "p000.jpg"))
        #expect(row.uploadedAt != nil && row.attempts == 1)
        #expect(destination.uploadCalls.withLock { $0.count } == 1)
        #expect(Date() >= notBefore)
    }
}
