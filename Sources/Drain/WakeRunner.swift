import AssetStore
import Foundation
import PhotoAnalysis

/// Settings of one `wake` invocation.
public struct WakeOptions: Sendable {
    /// The upload endpoint new jobs go to.
    public var destination: String
    /// Unacknowledged jobs allowed at once.
    public var inflightLimit: Int = 40
    /// Photos analysed at most in this invocation (one page).
    public var pageSize: Int = 40
    /// Counted failures before a photo is failed.
    public var retryPolicy = RetryPolicy()
    /// Stop and report "work remains" after this long.
    public var runtimeLimit: Duration?
    /// Concurrent analyses within the page.
    public var slots: Int = 1
    /// Create jobs for files with an `unanalysable` verdict too, uploading them as they are; by
    /// default they stay in the library only, and count as done.
    public var uploadUnanalysable = false
    /// Make the scan a full walk (every folder read), which finds files rewritten in place; by
    /// default it reads only folders that changed (see `AssetStore.scan(full:fullWalkAfter:)`).
    public var fullScan = false
    /// The wall clock a failed job's `retryNotBefore` (the server's `Retry-After`) is compared with.
    public var clock: @Sendable () -> Date = { Date() }
    /// Files larger than this get no job yet (a metered network's `--metered-file-limit`).
    public var maxUploadSize: Int64?

    public init(destination: String) { self.destination = destination }
}

/// What one invocation did.
public struct WakeReport: Sendable, Equatable {
    public var acknowledged = 0
    public var retried = 0
    public var cancelled = 0
    public var created = 0
    public var analysed = 0
    /// Why analysis stopped early, if it did (memory, runtime, signal), or why photos of the page
    /// were left unanalysed (their analysis did not fit the memory headroom).
    public var bailed: String?
    /// Photos of the page left unanalysed because their analysis did not fit the memory headroom.
    public var memoryDeferrals = MemoryDeferrals()
    /// Work left: photos not yet uploaded or failed, or jobs not yet acknowledged.
    public var workRemains = false
    /// Jobs the agent holds (registered or pending) at the end.
    public var jobsInFlight = 0
    /// Whether an agent was running at the end: jobs in flight progress only then.
    public var agentRunning = false
    /// Stopped by `terminate` or the runtime limit.
    public var interrupted = false
    /// Set when the agent's upload was refused for a reason of the destination's configuration
    /// (401/403: token; 404: no upload endpoint; a certificate that failed verification): the job
    /// was put back uncharged, and the invocation is a configuration error rather than progress.
    public var refused: String?

    /// Failed jobs left for a later wake because their server's `Retry-After` has not passed.
    public var retriesDeferred = 0
    /// The earliest time one of those may be retried.
    public var nextRetryAt: Date?

    public var madeProgress: Bool { acknowledged + retried + cancelled + created + analysed > 0 }

    /// True when work remains and something is moving it: this invocation made progress, was
    /// interrupted, or an agent is running to perform the jobs in flight. A wake with jobs waiting
    /// but no agent, and nothing else done, must not report "processing" (exit 75); a retry
    /// waiting for its server's `Retry-After` does not change that, as the retry needs an agent too.
    public var progressing: Bool { madeProgress || interrupted || (jobsInFlight > 0 && agentRunning) }
}

/// One bounded invocation of the closed-app extension's work (the seeds' `processJobs()`), in its
/// order: acknowledge finished jobs; retry retryable failed ones (acknowledging permanent errors
/// instead); cancel jobs made redundant; create jobs for analysed photos until the inflight limit;
/// analyse at most one page of photos, bailing the moment memory headroom runs low. It never sends
/// file bytes: the `agent` performs the jobs.
public final class WakeRunner: Sendable {
    private let store: AssetStore
    private let analyzer: any PhotoAnalyzing
    private let memory: MemoryGuard
    private let options: WakeOptions
    private let latch = OneShotLatch<String>()

    public init(store: AssetStore, analyzer: any PhotoAnalyzing, memory: MemoryGuard, options: WakeOptions) {
        self.store = store
        self.analyzer = analyzer
        self.memory = memory
        self.options = options
    }

    /// The extension's `willTerminate()`: stop promptly; the run reports work remaining.
    public func terminate(reason: String) { latch.complete(reason) }

    /// Runs the invocation. Throws only when the store fails.
    public func run() throws(StoreError) -> WakeReport {
        // The guard measures use by the resident set: where it is tight, freed buffers must leave it.
        memory.prepareForAnalysis()
        let deadline = options.runtimeLimit.map { ContinuousClock.now + $0 }
        var report = WakeReport()
        func stopping() -> Bool {
            if let deadline, ContinuousClock.now >= deadline { latch.complete("runtime limit reached") }
            return latch.isCompleted
        }
        let policy = options.retryPolicy
        let now = options.clock()
        _ = try store.scan(full: options.fullScan, rehash: FileReader.sha256Hex)

        // 1. Acknowledge finished jobs that will not be retried.
        for job in try store.jobs(for: .acknowledge) where !stopping() {
            let asset = try store.asset(for: job)
            if job.state == .failed, let failure = job.failure, DrainRunner.isDestinationRefusal(failure) {
                // A wrong token, URL or CA refuses every photo alike: failing them one by one would
                // fail the whole library for good. Put the job back as it was, uncharged.
                _ = try store.retryJob(job, update: .unchanged, inflightLimit: .max)
                report.refused = "\(failure.code): \(failure.message)"
                continue
            }
            if job.state == .failed && policy.shouldRetry(job, asset: asset) {
                if let notBefore = job.retryNotBefore, notBefore > now {
                    report.retriesDeferred += 1
                    report.nextRetryAt = min(report.nextRetryAt ?? notBefore, notBefore)
                }
                continue
            }
            try store.acknowledgeJob(job) { job, asset in policy.update(for: job, asset: asset) }
            report.acknowledged += 1
        }
        // 2. Retry retryable failed jobs, except those whose server asked (Retry-After) to wait longer.
        for job in try store.jobs(for: .retry, maxAttempts: policy.maxAttempts, now: now) where !stopping() {
            let asset = try store.asset(for: job)
            guard policy.shouldRetry(job, asset: asset) else { continue }
            do {
                // To the destination of this invocation: after `--to` changes, a retry goes to the new one.
                if try store.retryJob(job, update: policy.update(for: job, asset: asset), destination: options.destination,
                                      inflightLimit: options.inflightLimit) != nil {
                    report.retried += 1
                }
            } catch let error where error.code == .limitExceeded {
                break
            }
        }
        // 3. Cancel jobs made redundant (photo removed, changed, or already uploaded).
        for job in try store.redundantJobs() where !stopping() {
            if try store.cancelJob(job) { report.cancelled += 1 }
        }
        // 4. Create jobs for analysed photos until the inflight limit.
        creating: while !stopping() {
            let candidates = try store.assetsNeedingJobs(limit: 50, includeUnanalysable: options.uploadUnanalysable,
                                                           maxSize: options.maxUploadSize)
            if candidates.isEmpty { break }
            for asset in candidates {
                do {
                    if try store.createJob(for: asset, destination: options.destination, inflightLimit: options.inflightLimit) != nil {
                        report.created += 1
                    }
                } catch let error where error.code == .limitExceeded {
                    break creating
                }
            }
        }
        // 5. Analyse at most one page, within the memory headroom.
        if !stopping() {
            report.analysed = try analysePage(report: &report, stopping: stopping)
        }
        if let reason = latch.value {
            report.interrupted = true
            if report.bailed == nil { report.bailed = reason }
        }
        let counts = try store.counts()
        report.jobsInFlight = try store.inflightJobCount()
        report.agentRunning = store.isAgentRunning()
        let heldBack = options.uploadUnanalysable ? counts.unanalysable : 0
        report.workRemains = counts.discovered + counts.analyzed + heldBack > 0 || report.jobsInFlight > 0
        return report
    }

    /// Analyses at most one page. `stopping` (the runtime limit or `terminate`) is asked before each
    /// photo is admitted: once it is true no new photo starts; the one in flight finishes and is banked.
    private func analysePage(report: inout WakeReport, stopping: () -> Bool) throws(StoreError) -> Int {
        let reading = memory.read()
        let typical = AnalyzeRunner.typicalCost
        let page = MemoryGuard.pageSize(headroom: reading.headroom, typicalCost: typical, slots: options.slots, maximum: options.pageSize)
        guard page > 0 else {
            if try store.unanalyzedCount() > 0 {
                report.bailed = "memory headroom \(reading.headroom >> 20) MiB is too small to analyse a photo (limit from \(reading.source))"
            }
            return 0
        }
        let claimed = try store.claimUnanalyzed(limit: page)
        var analysed = 0
        var deferral: String?
        defer { try? store.releaseClaims() }
        for asset in claimed {
            if stopping() { break }
            // Memory is the extension's clock: bail the moment headroom no longer fits a photo.
            let now = memory.read()
            if now.headroom < typical / 2 {
                report.bailed = "memory headroom dropped to \(now.headroom >> 20) MiB"
                break
            }
            var result = analyzer.analyze(path: store.absolutePath(of: asset), memoryBudget: now.headroom)
            if case .deferred = result {
                // Once more, with the memory the analyser holds idle handed back.
                analyzer.releaseIdleMemory()
                result = analyzer.analyze(path: store.absolutePath(of: asset), memoryBudget: memory.read().headroom)
            }
            switch result {
            case .verdict(let verdict):
                if try store.bankVerdict(verdict, for: asset) { analysed += 1 }
            case .deferred(let reason, let needs):
                // Never analysed smaller to fit: left for an invocation with more memory. The rest
                // of the page may fit.
                report.memoryDeferrals.record(needs: needs)
                deferral = reason
            }
        }
        if report.bailed == nil, let deferral {
            let count = report.memoryDeferrals.count
            report.bailed = "\(count) photo\(count == 1 ? "" : "s") left for later (\(deferral))"
        }
        return analysed
    }
}
