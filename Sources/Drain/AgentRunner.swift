import AssetStore
import Foundation
import Synchronization
import Transfer

/// Settings of the transfer agent.
public struct AgentOptions: Sendable {
    /// Jobs performed at once.
    public var slots: Int = 3
    /// How often to look for new jobs when idle.
    public var pollInterval: Duration = .seconds(1)
    /// Exit when no job has been seen for this long (nil: run until signalled, as a service does).
    public var exitWhenIdleFor: Duration?
    /// The destination for a job's destination URL (tokens and S3 credentials come from here,
    /// never the store). A destination that cannot be built fails its jobs with the reason.
    public var destination: @Sendable (String) throws(TransferError) -> any UploadDestination

    /// Options building each job's destination with `destination`.
    public init(slots: Int = 3, destination: @escaping @Sendable (String) throws(TransferError) -> any UploadDestination) {
        self.slots = max(1, slots)
        self.destination = destination
    }

    /// Options uploading every job to a resumable-upload server configured by `configuration`.
    public init(slots: Int = 3, configuration: @escaping @Sendable (String) -> UploadConfiguration) {
        self.init(slots: slots) { (url: String) throws(TransferError) -> any UploadDestination in
            ResumableUploader(configuration: configuration(url))
        }
    }
}

/// What the agent reports as it goes.
public enum AgentEvent: Sendable {
    case started(jobID: Int64, path: String?)
    case performed(jobID: Int64, outcome: PerformOutcome)
}

/// The transfer service (the seeds' system daemon): performs registered jobs a few at a time,
/// moves them through pending to succeeded or failed, and after its own restart resumes unfinished
/// uploads from the server's offset. It never analyses and never acknowledges: `wake` does.
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

    /// Runs until stopped (or idle for `exitWhenIdleFor`). Returns the number of jobs finished.
    public func run(events: @escaping @Sendable (AgentEvent) -> Void = { _ in }) async throws(StoreError) -> Int {
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
        await withTaskGroup(of: PerformOutcome.self) { group in
            var running = 0
            while !stopFlag.isCompleted && !Task.isCancelled {
                if running < options.slots {
                    do {
                        for job in try store.claimJobsToPerform(limit: options.slots - running) {
                            running += 1
                            idleSince = .now
                            let performer = JobPerformer(store: store, uploader: uploader(for: job.destination))
                            events(.started(jobID: job.id, path: (try? store.asset(for: job))?.path))
                            group.addTask {
                                let outcome = await performer.perform(job)
                                events(.performed(jobID: job.id, outcome: outcome))
                                return outcome
                            }
                        }
                    } catch {
                        storeError = error as? StoreError
                        break
                    }
                }
                if running == 0 {
                    if let idle = options.exitWhenIdleFor, ContinuousClock.now - idleSince >= idle { break }
                    try? await Task.sleep(for: options.pollInterval)
                    continue
                }
                // One in for each one out. A stop cancels this task, which cancels the uploads.
                if let outcome = await group.next() {
                    running -= 1
                    idleSince = .now
                    if case .finished = outcome { finished += 1 }
                }
            }
            group.cancelAll()
            for await outcome in group {
                if case .finished = outcome { finished += 1 }
            }
        }
        return (finished, storeError)
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
