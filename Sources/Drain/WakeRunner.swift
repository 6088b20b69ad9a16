import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization

/// Settings of one `wake` invocation.
public struct WakeOptions: Sendable {
    /// The upload endpoint new jobs go to.
    public var destination: String
    /// Unacknowledged jobs allowed at once.
    public var inflightLimit: Int = 40
    /// Photos analysed at most in one pass (one page).
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
    /// Keep the agent fed until `runtimeLimit` instead of one pass: while an agent is running and
    /// work remains, the pass is repeated (acknowledging what the agent finished, creating jobs in
    /// their place, analysing further pages), and the jobs are topped up between the photos of a
    /// page, so the agent's queue never runs dry while photos wait. Needs a `runtimeLimit`.
    public var feedAgent = false
    /// The shortest wait between passes that found nothing to do (it doubles up to half a
    /// second while nothing changes).
    public var feedInterval: Duration = .milliseconds(50)

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

    /// Everything counted as done so far; a pass that leaves it unchanged did nothing.
    var progress: Int { acknowledged + retried + cancelled + created + analysed }

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

    /// Runs the invocation. Throws only when the store fails. Blocks the calling thread, which
    /// must be one of its own (`wake` runs it so), never one of Swift's cooperative pool: the
    /// analysis runs on that pool meanwhile.
    public func run() throws(StoreError) -> WakeReport {
        // The guard measures use by the resident set: where it is tight, freed buffers must leave it.
        memory.prepareForAnalysis()
        let deadline = options.runtimeLimit.map { ContinuousClock.now + $0 }
        var report = WakeReport()
        func stopping() -> Bool {
            if let deadline, ContinuousClock.now >= deadline { latch.complete("runtime limit reached") }
            return latch.isCompleted
        }
        _ = try store.scan(full: options.fullScan, rehash: FileReader.sha256Hex)
        // An agent to keep fed: only then does repeating the hand-over move anything.
        let feeding = options.feedAgent && options.runtimeLimit != nil && store.isAgentRunning()
        try handOver(report: &report, stopping: stopping)
        if !stopping() {
            try analyse(report: &report, feeding: feeding, stopping: stopping)
        }
        // Analysis done: go on handing the agent what it finishes, until nothing remains.
        var idle = options.feedInterval
        while feeding, !stopping(), report.refused == nil, store.isAgentRunning(), try workRemains() {
            let before = report.progress
            try handOver(report: &report, stopping: stopping)
            if report.progress == before {
                Thread.sleep(forTimeInterval: Double(idle.components.attoseconds) / 1e18 + Double(idle.components.seconds))
                idle = min(idle * 2, .milliseconds(500))
            } else {
                idle = options.feedInterval
            }
        }
        if let reason = latch.value {
            report.interrupted = true
            if report.bailed == nil { report.bailed = reason }
        }
        report.jobsInFlight = try store.inflightJobCount()
        report.agentRunning = store.isAgentRunning()
        report.workRemains = try workRemains()
        return report
    }

    /// Whether photos wait for analysis or upload, or jobs are not yet acknowledged.
    private func workRemains() throws(StoreError) -> Bool {
        let counts = try store.counts()
        let heldBack = options.uploadUnanalysable ? counts.unanalysable : 0
        if counts.discovered + counts.analyzed + heldBack > 0 { return true }
        return try store.inflightJobCount() > 0
    }

    /// Steps 1 to 4 of the invocation's work, in the extension's order: everything but analysis.
    private func handOver(report: inout WakeReport, stopping: () -> Bool) throws(StoreError) {
        try acknowledge(report: &report, stopping: stopping)
        let policy = options.retryPolicy
        let now = options.clock()
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
        try createJobs(report: &report, stopping: stopping)
    }

    /// Acknowledges finished jobs that will not be retried (step 1).
    private func acknowledge(report: inout WakeReport, stopping: () -> Bool) throws(StoreError) {
        let policy = options.retryPolicy
        let now = options.clock()
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
    }

    /// Creates jobs for analysed photos until the inflight limit (step 4).
    private func createJobs(report: inout WakeReport, stopping: () -> Bool) throws(StoreError) {
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
    }

    /// Step 5: analyses one page (with `feeding`, every photo) through the runner with uploads
    /// off (`AnalyzeRunner`), in `options.slots` analyses at once, under the one memory policy
    /// (`AnalysisStep`: each slot's share of the headroom, a photo that does not fit its share
    /// tried alone, never analysed smaller), bailing the moment the headroom falls below half a
    /// typical photo's cost: memory is the extension's clock. `stopping` (the runtime limit or
    /// `terminate`) is asked every 20 ms: once it is true no new photo starts, and those in flight
    /// finish by the stop rule (`StopGrace`). While `feeding`, the jobs are topped up meanwhile,
    /// so the agent's queue does not run dry during analysis.
    private func analyse(report: inout WakeReport, feeding: Bool, stopping: () -> Bool) throws(StoreError) {
        var analysisOptions = AnalyzeOptions(slots: options.slots, pageSize: max(1, options.pageSize))
        analysisOptions.maxPages = feeding ? nil : 1
        analysisOptions.bailBelowHeadroom = AnalyzeRunner.typicalCost / 2
        guard options.pageSize > 0 else { return }
        let analysis = AnalyzeRunner(store: store, analyzer: analyzer, options: analysisOptions, memory: memory)
        let banked = Atomic<Int>(0)
        let outcome = Mutex<AnalyzeOutcome?>(nil)
        let ended = DispatchSemaphore(value: 0)
        Task.detached {
            let result = await analysis.run { event in
                if case .verdict(_, _, true, _) = event { banked.add(1, ordering: .relaxed) }
            }
            outcome.withLock { $0 = result }
            ended.signal()
        }
        var toppedUp = ContinuousClock.now
        var stopAsked = false
        while ended.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
            if !stopAsked && stopping() {
                analysis.stop(.interrupted(signal: SIGTERM))
                stopAsked = true
            }
            if feeding && !stopAsked && ContinuousClock.now - toppedUp >= options.feedInterval {
                try handOver(report: &report, stopping: stopping)
                toppedUp = .now
            }
        }
        report.analysed += banked.load(ordering: .relaxed)
        report.memoryDeferrals = analysis.memoryDeferrals
        if case .failed = outcome.withLock({ $0 }), let error = analysis.storeError { throw error }
        if report.bailed == nil { report.bailed = analysis.bailed }
    }
}
