import Foundation
import Testing
@testable import AssetStore

@Suite struct UploadJobTests {
    /// A store with `count` analysed photos.
    static func analysedLibrary(_ count: Int) throws -> (TemporaryLibrary, AssetStore) {
        let library = try TemporaryLibrary()
        for i in 0..<count { try library.write("p\(i).jpg", "photo \(i)") }
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: count) {
            try store.bankVerdict(TemporaryLibrary.verdict(), for: asset)
        }
        return (library, store)
    }

    /// A policy for these tests: success records the server id; a failure counts, and is terminal
    /// when permanent or at the fifth attempt.
    static func decide(_ job: UploadJob, _ asset: AssetRecord?) -> AssetStore.AssetUpdate {
        if job.state == .succeeded { return .uploaded(serverID: job.serverID) }
        let attempts = (asset?.attempts ?? 0) + 1
        let failure = job.failure
        return .failure(attempts: attempts, message: "\(failure?.code ?? "?"): \(failure?.message ?? "")",
                        terminal: failure?.transient != true || attempts >= 5)
    }

    static func retryUpdate(_ store: AssetStore, _ job: UploadJob) throws -> AssetStore.AssetUpdate {
        let asset = try store.asset(for: job)
        return .failure(attempts: (asset?.attempts ?? 0) + 1, message: "retry", terminal: false)
    }

    static let ok = JobResult.succeeded(status: 201, serverID: "obj-1", headers: ["location": "/uploads/1"])
    static func failure(transient: Bool) -> JobResult {
        .failed(status: transient ? 503 : 403, headers: [:],
                failure: UploadJob.Failure(domain: "http", code: transient ? "503" : "403", message: "status", transient: transient))
    }

    @Test func lifeCycleFromRegisteredToAcknowledged() throws {
        let (_, store) = try Self.analysedLibrary(1)
        let asset = try #require(try store.assetsNeedingJobs(limit: 10).first)
        let job = try #require(try store.createJob(for: asset, destination: "http://127.0.0.1:1/u", headers: ["x-a": "b"], inflightLimit: 5))
        #expect(job.state == .registered && job.requestHeaders == ["x-a": "b"])
        #expect(try store.assetsNeedingJobs(limit: 10).isEmpty)
        #expect(try store.createJob(for: asset, destination: "http://127.0.0.1:1/u", inflightLimit: 5) == nil)
        let claimed = try store.claimJobsToPerform(limit: 5)
        #expect(claimed.map(\.id) == [job.id] && claimed.first?.state == .pending)
        try store.checkpointJob(job, resumeURL: "http://127.0.0.1:1/uploads/1", confirmedOffset: 1000)
        #expect(try store.finishJob(job, result: Self.ok))
        let finished = try #require(try store.jobs(for: .acknowledge).first)
        #expect(finished.serverID == "obj-1" && finished.responseHeaders["location"] == "/uploads/1")
        #expect(finished.resumeURL == "http://127.0.0.1:1/uploads/1")
        #expect(try store.job(id: job.id) == finished)
        try store.acknowledgeJob(finished, decide: Self.decide)
        #expect(try store.job(id: job.id) == nil)
        #expect(try store.inflightJobCount() == 0)
        let row = try #require(try store.asset(path: "p0.jpg"))
        #expect(row.state == .uploaded && row.serverID == "obj-1")
    }

    @Test func inflightLimitThrowsAndAcknowledgingFreesAPlace() throws {
        let (_, store) = try Self.analysedLibrary(4)
        let assets = try store.assetsNeedingJobs(limit: 10)
        var jobs: [UploadJob] = []
        for asset in assets.prefix(3) {
            jobs.append(try #require(try store.createJob(for: asset, destination: "d", inflightLimit: 3)))
        }
        let error = try #require(throws: StoreError.self) { try store.createJob(for: assets[3], destination: "d", inflightLimit: 3) }
        #expect(error.code == .limitExceeded)
        _ = try store.claimJobsToPerform(limit: 1)
        try store.finishJob(jobs[0], result: Self.ok)
        #expect(throws: StoreError.self) { try store.createJob(for: assets[3], destination: "d", inflightLimit: 3) }
        try store.acknowledgeJob(jobs[0], decide: Self.decide)
        #expect(try store.createJob(for: assets[3], destination: "d", inflightLimit: 3) != nil)
    }

    @Test func cancelledJobsAreAcknowledgedAutomatically() throws {
        let (library, store) = try Self.analysedLibrary(3)
        let assets = try store.assetsNeedingJobs(limit: 10)
        let jobs = try assets.map { try #require(try store.createJob(for: $0, destination: "d", inflightLimit: 10)) }
        // Redundant: one photo removed, one changed, one fine.
        try library.remove("p0.jpg")
        try library.write("p1.jpg", "photo 1, edited")
        _ = try store.scan()
        let redundant = try store.redundantJobs()
        #expect(Set(redundant.map(\.id)) == Set([jobs[0].id, jobs[1].id]))
        for job in redundant { #expect(try store.cancelJob(job)) }
        #expect(try store.inflightJobCount() == 1)
        #expect(try store.jobs(for: .process).map(\.id) == [jobs[2].id])
        #expect(try store.asset(path: "p1.jpg")?.attempts == 0)
    }

    @Test func transientFailureIsRetriedKeepingTheResumeURL() throws {
        let (_, store) = try Self.analysedLibrary(1)
        let asset = try #require(try store.assetsNeedingJobs(limit: 1).first)
        let job = try #require(try store.createJob(for: asset, destination: "d", inflightLimit: 2))
        _ = try store.claimJobsToPerform(limit: 1)
        try store.checkpointJob(job, resumeURL: "d/uploads/9", confirmedOffset: 42)
        try store.finishJob(job, result: Self.failure(transient: true))
        let failed = try #require(try store.jobs(for: .retry).first)
        let retried = try #require(try store.retryJob(failed, update: try Self.retryUpdate(store, failed), inflightLimit: 2))
        #expect(retried.state == .registered && retried.resumeURL == "d/uploads/9" && retried.confirmedOffset == 42)
        #expect(try store.asset(path: "p0.jpg")?.attempts == 1)
        // A new destination starts afresh.
        _ = try store.claimJobsToPerform(limit: 1)
        try store.finishJob(retried, result: Self.failure(transient: true))
        let again = try #require(try store.jobs(for: .retry).first)
        let moved = try #require(try store.retryJob(again, update: try Self.retryUpdate(store, again), destination: "e", inflightLimit: 2))
        #expect(moved.destination == "e" && moved.resumeURL == nil && moved.confirmedOffset == 0)
        #expect(try store.asset(path: "p0.jpg")?.attempts == 2)
    }

    /// A failed job keeps its response headers like a succeeded one; a transient failure's time
    /// to wait becomes `retryNotBefore`, and `.retry` leaves the job out until then. A permanent
    /// failure is never retried, so a time given with it sets nothing.
    @Test func failedJobKeepsItsHeadersAndRetryAfterDefersItsRetry() throws {
        let (_, store) = try Self.analysedLibrary(2)
        let assets = try store.assetsNeedingJobs(limit: 2)
        #expect(assets.count == 2)
        let headers = ["retry-after": "60", "x-request-id": "abc"]
        var jobs: [UploadJob] = []
        for asset in assets {
            jobs.append(try #require(try store.createJob(for: asset, destination: "d", inflightLimit: 5)))
        }
        _ = try store.claimJobsToPerform(limit: 2)
        let start = Date()
        #expect(try store.finishJob(jobs[0], result: .failed(status: 503, headers: headers, failure: UploadJob.Failure(
            domain: "http", code: "503", message: "busy", transient: true), retryNotBefore: start.addingTimeInterval(60))))
        #expect(try store.finishJob(jobs[1], result: .failed(status: 400, headers: headers, failure: UploadJob.Failure(
            domain: "http", code: "400", message: "bad", transient: false), retryNotBefore: start.addingTimeInterval(60))))
        let transient = try #require(try store.job(id: jobs[0].id))
        #expect(transient.responseHeaders == headers && transient.responseStatus == 503)
        let wait = try #require(transient.retryNotBefore).timeIntervalSince(start)
        #expect(wait >= 59 && wait <= 62)
        let permanent = try #require(try store.job(id: jobs[1].id))
        #expect(permanent.responseHeaders == headers && permanent.retryNotBefore == nil)
        #expect(try store.jobs(for: .retry).isEmpty)
        #expect(try store.jobs(for: .retry, now: start.addingTimeInterval(30)).isEmpty)
        // status shows the wait.
        let progress = try store.transferProgress()
        #expect(progress.jobsToAcknowledge == 2 && progress.retriesWaiting == 1)
        #expect((58...61).contains(try #require(progress.retryWaitSeconds)))
        #expect(try store.jobs(for: .retry, now: start.addingTimeInterval(63)).map(\.id) == [jobs[0].id])
    }

    @Test func permanentFailureIsNotRetriedAndFailsThePhoto() throws {
        let (_, store) = try Self.analysedLibrary(1)
        let asset = try #require(try store.assetsNeedingJobs(limit: 1).first)
        let job = try #require(try store.createJob(for: asset, destination: "d", inflightLimit: 2))
        _ = try store.claimJobsToPerform(limit: 1)
        try store.finishJob(job, result: Self.failure(transient: false))
        #expect(try store.jobs(for: .retry).isEmpty)
        let finished = try #require(try store.jobs(for: .acknowledge).first)
        try store.acknowledgeJob(finished, decide: Self.decide)
        let row = try #require(try store.asset(path: "p0.jpg"))
        #expect(row.state == .failed && row.lastError?.contains("403") == true && row.attempts == 1)
    }

    @Test func retryLimitFailsThePhoto() throws {
        let (_, store) = try Self.analysedLibrary(1)
        let asset = try #require(try store.assetsNeedingJobs(limit: 1).first)
        var job = try #require(try store.createJob(for: asset, destination: "d", inflightLimit: 2))
        for _ in 0..<4 {
            _ = try store.claimJobsToPerform(limit: 1)
            try store.finishJob(job, result: Self.failure(transient: true))
            let failed = try #require(try store.jobs(for: .retry, maxAttempts: 5).first)
            job = try #require(try store.retryJob(failed, update: try Self.retryUpdate(store, failed), inflightLimit: 2))
        }
        _ = try store.claimJobsToPerform(limit: 1)
        try store.finishJob(job, result: Self.failure(transient: true))
        #expect(try store.jobs(for: .retry, maxAttempts: 5).isEmpty)  // the fifth failure is acknowledged instead
        let last = try #require(try store.jobs(for: .acknowledge).first)
        try store.acknowledgeJob(last, decide: Self.decide)
        let row = try #require(try store.asset(path: "p0.jpg"))
        #expect(row.state == .failed && row.attempts == 5)
    }

    @Test func pendingJobOfADeadAgentIsTakenOver() throws {
        let (library, store) = try Self.analysedLibrary(1)
        let asset = try #require(try store.assetsNeedingJobs(limit: 1).first)
        let job = try #require(try store.createJob(for: asset, destination: "d", inflightLimit: 2))
        #expect(try store.claimJobsToPerform(limit: 1, leaseSeconds: -1).count == 1)   // expired claim
        let other = try library.open()
        let taken = try other.claimJobsToPerform(limit: 1)
        #expect(taken.map(\.id) == [job.id])
        #expect(try store.claimJobsToPerform(limit: 1).isEmpty)
    }

    @Test func directUploadsRotateByLastAttempt() throws {
        let (_, store) = try Self.analysedLibrary(3)
        let first = try store.claimForUpload(limit: 1)
        #expect(first.map(\.path) == ["p0.jpg"])
        try store.recordUploadFailure(first[0], attempts: 1, message: "timeout", failed: false)
        // p0 was just attempted: the never-attempted ones come first.
        #expect(try store.claimForUpload(limit: 3).map(\.path) == ["p1.jpg", "p2.jpg", "p0.jpg"])
        // All three are claimed now: nothing is handed out twice.
        #expect(try store.claimForUpload(limit: 3).isEmpty)
        try store.releaseClaims()
        #expect(try store.claimForUpload(limit: 3).count == 3)
    }

    @Test func headerMapsRoundTrip() {
        let headers = ["x-verdict": "{\"label\":\"faces\",\"n\":\"\\u00e9\"}", "content-disposition": "inline; filename*=UTF-8''a%20b"]
        #expect(JSONText.decode(JSONText.encode(headers)) == headers)
        #expect(JSONText.decode("not json").isEmpty)
    }
}
