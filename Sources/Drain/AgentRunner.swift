import AssetStore
import Foundation
import Synchronization
import SystemSupport
import Transfer

/// Settings of the transfer agent.
public struct AgentOptions: Sendable {
    /// Jobs performed at once: by default as many as the foreground drain's slots.
    public var slots: Int = DrainOptions.defaultSlots
    /// How often to look for new jobs when idle.
    public var pollInterval: Duration = .seconds(1)
    /// Exit when no job has been seen for this long (nil: run until signalled, as a service does).
    public var exitWhenIdleFor: Duration?
    /// After a job found its destination away (no answer, and none to a reachability check
    /// either), the agent puts the job back uncharged and takes no job for this long; the pause
    /// doubles while the destination stays away, up to `maxProbeInterval`.
    public var probeInterval: Duration = .seconds(1)
    /// The longest pause while the destination is away.
    public var maxProbeInterval: Duration = .seconds(30)
    /// The destination for a job's destination URL (tokens and S3 credentials come from here,
    /// never the store). A destination that cannot be built fails its jobs with the reason.
    public var destination: @Sendable (String) throws(TransferError) -> any UploadDestination
    /// The run conditions, re-checked while the agent runs: it takes no job while they hold
    /// uploads back, and the monitor cancels the large uploads in flight (nil: none asked for).
    public var conditions: RunConditionMonitor?

    /// Options building each job's destination with `destination`.
    public init(slots: Int = DrainOptions.defaultSlots, destination: @escaping @Sendable (String) throws(TransferError) -> any UploadDestination) {
        self.slots = max(1, slots)
        self.destination = destination
    }

    /// Options uploading every job to a resumable-upload server configured by `configuration`.
    public init(slots: Int = DrainOptions.defaultSlots, configuration: @escaping @Sendable (String) -> UploadConfiguration) {
        self.init(slots: slots) { (url: String) throws(TransferError) -> any UploadDestination in
            ResumableUploader(configuration: configuration(url))
        }
    }
}

/// What the agent reports as it goes.
public enum AgentEvent: Sendable {
    case started(jobID: Int64, path: String?)
    case performed(jobID: Int64, outcome: PerformOutcome)
    /// The job's destination did not answer: the job went back to pending, uncharged, and the
    /// agent pauses for `pause` before taking jobs again.
    case destinationAway(jobID: Int64, message: String, pause: Duration)
    /// The job named another place than the library's destination: it was dropped unperformed
    /// (nothing built, no token, no photo sent there; the photo charged nothing, so the next
    /// `wake` makes it a job for the library's destination).
    case refusedJob(jobID: Int64, message: String)
    /// The run conditions now hold uploads back (why), or no longer do (nil): no job is taken
    /// meanwhile, and large uploads in flight were cancelled, their jobs left to resume.
    case conditions(held: String?)
}

/// The transfer service (the seeds' system daemon): performs registered jobs a few at a time,
/// moves them through pending to succeeded or failed, and after its own restart resumes unfinished
/// uploads from the server's offset. It never analyses and never acknowledges: `wake` does. A job
/// that fails because its destination is away (as `drain` tells it, `Reachability`) goes back to
/// pending instead, so `wake` charges the photo nothing for an outage however long it lasts.
public final class AgentRunner: Sendable {
    private let store: AssetStore
    private let options: AgentOptions
    private let stopFlag = OneShotLatch<String>()
    private let uploaders = Mutex<[String: any UploadDestination]>([:])
    private let worker = Mutex<Task<(Int, StoreError?), Never>?>(nil)

    public init(store: AssetStore, options: AgentOptions) {
        self.store = store
        self.options = options
    }

    /// Asks the agent to stop: uploads in flight are cancelled and their jobs left pending, to be
    /// resumed from the server's offset.
    public func stop(reason: String) {
        stopFlag.complete(reason)
        worker.withLock { $0?.cancel() }
    }

    /// Runs until stopped (or idle for `exitWhenIdleFor`), announced on the store as a running
    /// agent (`AgentPresence`) throughout. Returns the number of jobs finished; throws when the
    /// store fails or the presence cannot be announced.
    public func run(events: @escaping @Sendable (AgentEvent) -> Void = { _ in }) async throws(StoreError) -> Int {
        let presence = try AgentPresence(store: store)
        defer { withExtendedLifetime(presence) {} }
        let task = Task { await self.loop(events: events) }
        worker.withLock { $0 = task }
        if stopFlag.isCompleted { task.cancel() }
        let (finished, error) = await task.value
        if let error { throw error }
        return finished
    }

    private func loop(events: @escaping @Sendable (AgentEvent) -> Void) async -> (Int, StoreError?) {
        var finished = 0
        var idleSince = ContinuousClock.now
        var storeError: StoreError?
        let store = self.store
        await withTaskGroup(of: (jobID: Int64, outcome: PerformOutcome, away: String?).self) { group in
            var running = 0
            // While the destination is away no new job starts; the pause doubles (`AwayBackoff`).
            var away = AwayBackoff(first: options.probeInterval, ceiling: options.maxProbeInterval)
            var held: String?
            loop: while !stopFlag.isCompleted && !Task.isCancelled {
                if let course = options.conditions?.course, course.reason != held {
                    held = course.reason
                    events(.conditions(held: held))
                }
                if running < options.slots && held == nil && away.isDue(now: .now) {
                    // The store is asked on a thread of its own, never on the cooperative pool.
                    let limit = options.slots - running
                    // A job for another place than the library's destination is dropped here,
                    // before anything is built for it (`foreignJob`).
                    let claimed = await onOwnThreadUntilDone("photodrain-agent-claim") { () -> Result<([(UploadJob, AssetRecord?)], [(Int64, String)]), StoreError> in
                        do throws(StoreError) {
                            let library = try store.activeDestination()
                            var jobs: [(UploadJob, AssetRecord?)] = [], refused: [(Int64, String)] = []
                            for job in try store.claimJobsToPerform(limit: limit) {
                                if let reason = Self.foreignJob(job.destination, library: library) {
                                    if try store.cancelJob(job) { refused.append((job.id, reason)) }
                                } else {
                                    jobs.append((job, try? store.asset(for: job)))
                                }
                            }
                            return .success((jobs, refused))
                        } catch {
                            return .failure(error)
                        }
                    }
                    let jobs: [(UploadJob, AssetRecord?)]
                    switch claimed {
                    case .success(let (found, refused)):
                        jobs = found
                        for (jobID, reason) in refused { events(.refusedJob(jobID: jobID, message: reason)) }
                        // Dropped jobs freed their slots at once: claim again without idling.
                        if !refused.isEmpty {
                            idleSince = .now
                            if jobs.isEmpty && running == 0 { continue }
                        }
                    case .failure(let error):
                        storeError = error
                        break loop
                    }
                    let conditions = options.conditions
                    for (job, asset) in jobs {
                        running += 1
                        idleSince = .now
                        let destination = uploader(for: job.destination)
                        let performer = JobPerformer(store: store, uploader: destination)
                        events(.started(jobID: job.id, path: asset?.path))
                        let size = Int64(asset?.size ?? 0)
                        group.addTask {
                            // Cancelled by the monitor when the conditions turn against it: the
                            // job goes back to pending (`deferred`), resumable.
                            let outcome = if let conditions {
                                await conditions.transfer(size: size) { await performer.perform(job) }
                            } else {
                                await performer.perform(job)
                            }
                            guard case .finished(.failed(_, _, let failure, _)) = outcome,
                                  await Reachability.destinationIsAway(after: failure, destination: destination),
                                  await onOwnThreadUntilDone("photodrain-agent-record", { () -> Bool in
                                      guard let failed = try? store.job(id: job.id) else { return false }
                                      return (try? store.retryJob(failed, update: .unchanged, inflightLimit: .max)) != nil
                                  }) else {
                                events(.performed(jobID: job.id, outcome: outcome))
                                return (job.id, outcome, nil)
                            }
                            // Reported by the loop as `destinationAway`, with the pause.
                            return (job.id, outcome, "\(failure.code): \(failure.message)")
                        }
                    }
                }
                if running == 0 {
                    if let idle = options.exitWhenIdleFor, ContinuousClock.now - idleSince >= idle { break }
                    try? await Task.sleep(for: options.pollInterval)
                    continue
                }
                // One in for each one out. A stop cancels this task, which cancels the uploads.
                if let (jobID, outcome, awayMessage) = await group.next() {
                    running -= 1
                    idleSince = .now
                    if case .storeFailed(let error) = outcome {
                        storeError = error
                        break
                    }
                    if let awayMessage {
                        let pause = away.failed(now: .now)
                        events(.destinationAway(jobID: jobID, message: awayMessage, pause: pause))
                    } else if case .finished = outcome {
                        finished += 1
                        if case .finished(.succeeded) = outcome { away.answered() }
                    }
                }
            }
            group.cancelAll()
            for await (_, outcome, awayMessage) in group where awayMessage == nil {
                if case .finished = outcome { finished += 1 }
            }
        }
        return (finished, storeError)
    }

    /// Why a job's destination is not the one the library uploads to (`AssetStore.activeDestination`,
    /// which `wake` and `drain` set, dropping the old destination's jobs when it changes), or nil
    /// when it is. A job row naming another place (a store written by something else, a bug) must
    /// never get the agent's token or a photo.
    static func foreignJob(_ destination: String, library: String?) -> String? {
        let shown = TerminalText.escaped(destination)
        guard let library else {
            return "the job names \(shown), but the library has no destination yet (run wake or drain with --to); dropped, nothing sent"
        }
        if AssetStore.destinationKey(destination) == AssetStore.destinationKey(library) { return nil }
        return "the job names \(shown), but the library uploads to \(TerminalText.escaped(library)); dropped, nothing sent there"
    }

    private func uploader(for destination: String) -> any UploadDestination {
        uploaders.withLock { cache in
            if let existing = cache[destination] { return existing }
            let made: any UploadDestination
            do throws(TransferError) {
                made = try options.destination(destination)
            } catch {
                made = UnavailableDestination(endpoint: destination, error: error)
            }
            cache[destination] = made
            return made
        }
    }
}
