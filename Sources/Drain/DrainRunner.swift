import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization
import Transfer
import SystemSupport
/// The runner, the one every command's loop is (`drain`; `analyze` and `wake`'s analysis are it
/// with uploads off, `DrainOptions.destination` nil, through `AnalyzeRunner`): `slots` concurrent
/// slots split by `planSlots` on every freed slot, upload-first. Uploads go through upload jobs
/// performed in-process (so an interrupted upload is resumed from the server's offset by the next
/// run); analysis takes slots only when nothing waits for upload or the destination is
/// unreachable. Offline, it keeps analysing, charges no attempts, and resumes uploading when the
/// destination answers again. Its decisions are `DrainSchedule`'s; a stop follows `StopGrace`.
///
/// An analysis may use its slot's share of the memory headroom. A photo that needs more stays
/// claimed and is tried again alone once the analyses in flight are done (no other analysis
/// starts meanwhile), with all the headroom after the analyser has handed back what it holds
/// idle; one that does not fit even then stays unanalysed till the next run (see
/// `memoryDeferrals`), and the drain goes on with the others.
public final class DrainRunner: Sendable {
    let store: AssetStore
    let analyzer: any PhotoAnalyzing
    let options: DrainOptions
    let memory: MemoryGuard
    let uploader: (any UploadDestination)?
    /// Why the run was asked to stop (a signal, expiry, memory): the first ask wins.
    let stopReason = OneShotLatch<DrainOutcome>()
    let worker = Mutex<Task<DrainOutcome, Never>?>(nil)
    let deferrals = Mutex(MemoryDeferrals())
    /// The threads analyses run on, apart from the store queries' and transfers': as few as there
    /// are slots (a thread left by a stop aside), so the allocator keeps as few per-thread arenas
    /// of decoded pixels as there are analyses at once, not one per thread the shared pool has
    /// lent (`analyze`'s peak memory grew a fifth when analyses rotated over the shared pool).
    let analysisThreads: BlockingPool
    /// The transfers in flight, which a stop cancels at once (`StopGrace`).
    let transfers = Mutex(Transfers())
    /// Why memory ended the run (`DrainSchedule.bailed`), once the run is over.
    let bailedReason = Mutex<String?>(nil)
    /// The store's first error, behind a `failed` outcome.
    let firstStoreError = Mutex<StoreError?>(nil)

    struct Transfers {
        var next = 0
        var tasks: [Int: Task<PerformOutcome, Never>] = [:]
    }

    /// `analysisAlone`: a photo too big for a slot's share, analysed with no other analysis in flight.
    enum Kind: Sendable { case analysis, analysisAlone, upload }

    enum SlotResult: Sendable {
        case worked(Kind)
        case noWork(Kind)
        /// The photo's analysis did not fit the slot's share of the headroom: it stays claimed,
        /// to be analysed alone.
        case needsAlone(AssetRecord)
        /// An upload failed and the failure was counted against the photo.
        case uploadCharged
        case offline(String)
        /// The destination refused the upload for a reason of its own configuration (nothing charged).
        case refused(String)
        /// The destination asked to wait (`Retry-After`) until then; the job waits, uncharged.
        case retryAfter(Date)
        case storeFailed(String)
        /// Not a slot: the loop's look at the clock (`DrainOptions.expireAfter`) while slots run.
        case tick
    }

    public init(store: AssetStore, analyzer: any PhotoAnalyzing, options: DrainOptions, memory: MemoryGuard = MemoryGuard()) {
        self.store = store
        self.analyzer = analyzer
        self.options = options
        self.memory = memory
        self.uploader = options.destination
        // None kept past 10 s idle: a finished runner leaves no thread behind.
        analysisThreads = BlockingPool(keep: 0, linger: 10)
    }

    /// The largest file an upload may start with now: the run conditions' (a metered network's
    /// limit), else the options'. Nil: any size.
    var maxUploadSize: Int64? {
        guard let monitor = options.conditions else { return options.maxUploadSize }
        return monitor.course.maxUploadSize
    }

    /// The photos this run left unanalysed for memory (read after `run`).
    public var memoryDeferrals: MemoryDeferrals { deferrals.withLock { $0 } }

    /// Why memory stopped the run (`DrainOptions.bailBelowHeadroom`), read after `run`; nil when
    /// it did not.
    public var bailed: String? { bailedReason.withLock { $0 } }

    /// The store's error that ended the run `failed` (read after `run`), for a caller that throws it.
    public var storeError: StoreError? { firstStoreError.withLock { $0 } }

    /// Keeps the store's first error, and says it.
    func failure(_ error: any Error) -> String {
        if let error = error as? StoreError { firstStoreError.withLock { $0 = $0 ?? error } }
        return "\(error)"
    }

    /// Stops for a signal (`interrupted`).
    public func stop(signal: Int32) { stop(.interrupted(signal: signal)) }

    /// Stops promptly, by the stop rule (`StopGrace`): nothing new starts, uploads in flight are
    /// cancelled at once (their jobs stay resumable, uncharged), analyses in flight have
    /// `StopGrace.inFlight` to bank, then are abandoned. The run ends with `reason`; the first
    /// stop wins.
    public func stop(_ reason: DrainOutcome) {
        guard stopReason.complete(reason) else { return }
        transfers.withLock { $0.tasks.values.forEach { $0.cancel() } }
        Task.detached { [self] in
            try? await Task.sleep(for: StopGrace.inFlight)
            worker.withLock { $0?.cancel() }
        }
    }

    /// Where events are handed to `run`'s handler, in order (`waitForEvents`).
    private let delivery = DispatchQueue(label: "photodrain-drain-events")

    /// Waits until every event so far has been handled: `run` does before it returns; an analysis
    /// a stop left running (`OwnThreads`) may report one later, so a caller that waited for those
    /// waits for this too before its summary.
    public func waitForEvents() {
        delivery.sync {}
    }

    public func run(events: @escaping @Sendable (DrainEvent) -> Void) async -> DrainOutcome {
        // The guard measures use by the resident set: where it is tight, freed buffers must leave it.
        memory.prepareForAnalysis()
        // Events reach `events` in order on a queue of their own, never on the loop's task: a
        // handler may block (a command asks the store for its counts to size its progress bar).
        let delivery = self.delivery
        let deliver: @Sendable (DrainEvent) -> Void = { event in delivery.async { events(event) } }
        // An analysis slot, on a thread of its own, waits until its verdict has been handled: a
        // process killed after it banked a verdict has said so (`analyze --json` prints a line
        // per verdict banked, and a kill must not leave one banked but never said).
        let deliverNow: @Sendable (DrainEvent) -> Void = { event in delivery.sync { events(event) } }
        let task = Task { await self.loop(events: deliver, eventsNow: deliverNow) }
        worker.withLock { $0 = task }
        // Stopped before it started: nothing is in flight to wait for.
        if stopReason.isCompleted { task.cancel() }
        let outcome = await task.value
        let store = self.store
        await onOwnThreadUntilDone("photodrain-drain-release") {
            try? store.releaseClaims()
            // Every event is handled before the run returns (and its caller prints a summary).
            delivery.sync {}
        }
        return stopReason.value ?? outcome
    }

    /// The loop: it asks `DrainSchedule` what to do, does it, and tells it what happened. Every
    /// store query and folder walk runs on a thread of its own (`onOwnThread`), never on the
    /// cooperative pool the slots' tasks share.
    private func loop(events: @escaping @Sendable (DrainEvent) -> Void,
                      eventsNow: @escaping @Sendable (DrainEvent) -> Void) async -> DrainOutcome {
        let store = self.store, options = self.options
        // Watching starts before the first scan: nothing added between the two goes unseen.
        let started = await onOwnThread("photodrain-drain-start") { () -> Result<(LibraryWatcher?, String?, ScanReport?, Date?), StoreError> in
            var watcher: LibraryWatcher?
            var watchLimited: String?
            if options.watch {
                do throws(WatchError) {
                    watcher = try LibraryWatcher(root: store.root, includeHidden: (try? store.includesHidden()) ?? false,
                                                 excluding: store.ownPaths, watchLimit: options.watchLimit,
                                                 rootPollInterval: options.libraryPollInterval)
                    watchLimited = watcher?.limitReached
                } catch {
                    watchLimited = error.message
                }
            }
            do throws(StoreError) {
                let report = options.scanAtStart ? try store.scan(full: options.fullScan, rehash: FileReader.sha256Hex) : nil
                // A retry an earlier run left waiting for this destination's Retry-After holds uploads back.
                var serverWait: Date?
                if let destination = options.destination {
                    serverWait = try store.nextRetryAfter(destination: destination.identity.key,
                                                          maxAttempts: options.retryPolicy.maxAttempts, now: Date())
                }
                return .success((watcher, watchLimited, report, serverWait))
            } catch {
                return .failure(error)
            }
        }
        let watcher: LibraryWatcher?
        var schedule: DrainSchedule
        switch started {
        case nil:
            return .finished
        case .failure(let error)?:
            return .failed(message: failure(error))
        case .success(let (madeWatcher, watchLimited, report, serverWait))?:
            watcher = madeWatcher
            if let report { events(.scanned(report)) }
            schedule = DrainSchedule(options: options, serverWaitUntil: serverWait, watchLimited: watchLimited, now: .now)
        }
        if case .storeFailed(let message)? = await settleLeftoversOffPool(events: events) { return .failed(message: message) }

        return await withTaskGroup(of: SlotResult.self) { group -> DrainOutcome in
            var outcome: DrainOutcome?
            var ticking = false
            while !Task.isCancelled && outcome == nil && !stopReason.isCompleted {
                if schedule.expired(now: .now) {
                    stop(.expired)
                    continue
                }
                if let monitor = options.conditions, let event = schedule.conditions(monitor.course, at: .now) { events(event) }
                if let watcher {
                    for event in schedule.watched(watcher.takeChanges(), limitReached: watcher.limitReached, now: .now) { events(event) }
                }
                if let scan = schedule.scanDue(now: .now, hasWatcher: watcher != nil) {
                    switch await rescan(events: events, invalidating: scan.folders, full: scan.full, batch: scan.batch) {
                    case .failure(let error) where error.code == .unreadableRoot && options.watch:
                        if let event = schedule.scanFoundNoLibrary() { events(event) }
                    case .failure(let error):
                        outcome = .failed(message: failure(error))
                        continue
                    case .success(let found):
                        if let event = schedule.scanned(newWork: found.newWork, settling: found.settling, now: .now) { events(event) }
                    }
                }
                // Offline: check reachability now and then, backing off.
                if let uploader, schedule.probeDue(now: .now), schedule.probed(reachable: await Reachability.isReachable(uploader), now: .now) {
                    events(.online)
                }
                // No slot free: nothing can start (`slotToStart` and `memoryBail` would say so), so the
                // store is not asked what waits; the loop waits for a slot to finish.
                if schedule.hasFreeSlot {
                    let memory = self.memory
                    let counted = await onOwnThread("photodrain-drain-count") { () -> Result<(DrainSchedule.Work, MemoryGuard.Reading?), StoreError> in
                        do throws(StoreError) {
                            let work = DrainSchedule.Work(vision: try store.unanalyzedCount(),
                                                          upload: options.destination == nil ? 0
                                                              : try store.uploadableCount(includeUnanalysable: options.uploadUnanalysable,
                                                                                          maxSize: self.maxUploadSize))
                            // Where memory ends the run, the headroom is measured before each analysis starts.
                            let reading = options.bailBelowHeadroom != nil && work.vision > 0 ? memory.read() : nil
                            return .success((work, reading))
                        } catch {
                            return .failure(error)
                        }
                    }
                    let work: DrainSchedule.Work
                    switch counted {
                    case nil: continue
                    case .failure(let error)?:
                        outcome = .failed(message: failure(error))
                        continue
                    case .success(let (counts, reading))?:
                        work = counts
                        if let reading, let bail = schedule.memoryBail(work: work, headroom: reading.headroom, limitSource: reading.source) {
                            bailedReason.withLock { $0 = schedule.bailed }
                            stop(bail)
                            continue
                        }
                    }
                    if let start = schedule.slotToStart(work: work, now: .now, date: Date()) {
                        switch start {
                        case .upload: group.addTask { await self.uploadSlot(events: events) }
                        case .analysis: group.addTask { await self.analysisSlot(events: eventsNow) }
                        case .alone(let asset): group.addTask { await self.analysisSlot(alone: asset, events: eventsNow) }
                        }
                        continue
                    }
                    if schedule.isIdle {
                        // Nothing of ours in flight: jobs a killed runner finished but never recorded
                        // would otherwise hold their photos forever.
                        if options.watch || !work.isEmpty {
                            switch await settleLeftoversOffPool(events: events) {
                            case .storeFailed(let message)?:
                                outcome = .failed(message: message)
                                continue
                            case .some: continue
                            case nil: break
                            }
                        }
                        if options.watch {
                            await sleepWatching(&schedule, work: work, watcher: watcher, events: events)
                            continue
                        }
                        let idle: DrainSchedule.Idle?
                        if work.isEmpty {
                            // Before finishing, look once more: a photo added since the last scan goes too.
                            if schedule.finishesWithoutLooking {
                                outcome = .finished
                                continue
                            }
                            switch await rescan(events: events) {
                            case .failure(let error):
                                outcome = .failed(message: failure(error))
                                continue
                            case .success(let found): idle = schedule.lastScan(newWork: found.newWork, settling: found.settling, now: .now)
                            }
                        } else {
                            idle = schedule.whenIdle(work: work, now: .now, date: Date())
                        }
                        switch idle {
                        case nil: continue
                        case .finish(let end)?:
                            outcome = end
                            continue
                        case .wait(let pause)?: try? await Task.sleep(for: pause)
                        }
                        continue
                    }
                }
                // A run that expires looks at the clock while its slots run, as often as a person
                // would notice, and asks the store nothing until a slot finishes (or it expires).
                var finished: SlotResult?
                while finished == nil {
                    if options.expireAfter != nil && !ticking {
                        ticking = true
                        group.addTask {
                            try? await Task.sleep(for: .milliseconds(50))
                            return .tick
                        }
                    }
                    guard let next = await group.next() else { break }
                    guard case .tick = next else {
                        finished = next
                        break
                    }
                    ticking = false
                    if schedule.expired(now: .now) || stopReason.isCompleted || Task.isCancelled { break }
                }
                guard let result = finished else { continue }
                switch schedule.record(result, now: .now) {
                case .carryOn: break
                case .wentOffline(let message): events(.offline(message: message))
                case .end(let end): outcome = end
                }
            }
            if outcome == nil, let reason = stopReason.value {
                // The stop rule (`StopGrace`): what is in flight finishes, or `stop` cancels it.
                events(.stopping(reason: reason))
                while !schedule.isIdle, let result = await group.next() { _ = schedule.record(result, now: .now) }
            }
            // Cancelled, not waited out: the expiry clock's tick sleeps up to 50 ms, and a group
            // returned from waits for its tasks (every run that finished paid it at the end).
            group.cancelAll()
            for await _ in group {}
            return outcome ?? .finished
        }
    }

    /// Watching, nothing can start now: sleeps until a change, the next rescan, or whatever holds
    /// the work that remains (a watching run never ends for it).
    private func sleepWatching(_ schedule: inout DrainSchedule, work: DrainSchedule.Work, watcher: LibraryWatcher?,
                               events: @escaping @Sendable (DrainEvent) -> Void) async {
        let wake = schedule.watchWake(work: work, hasWatcher: watcher != nil, now: .now, date: Date())
        if wake.announceWatching { events(.watching(folders: watcher?.folderCount ?? 0, limited: schedule.watchLimited)) }
        while !Task.isCancelled && !stopReason.isCompleted {
            if schedule.shouldWake(for: watcher?.takeChanges() ?? LibraryChanges(), now: .now) { return }
            if let at = wake.at, ContinuousClock.now >= at { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// `settleLeftovers` on a thread of its own; nil also when the runner is stopping, and when it
    /// only analyses (the jobs are another runner's: `wake` hands them to the agent).
    private func settleLeftoversOffPool(events: @escaping @Sendable (DrainEvent) -> Void) async -> SlotResult? {
        guard options.destination != nil else { return nil }
        return await onOwnThread("photodrain-drain-settle") { self.settleLeftovers(events: events) } ?? nil
    }

    /// The failures that say the destination is misconfigured rather than the photo bad: 401/403
    /// (`unauthorized`), an account's quota used up (`quota-exceeded`, a 507 from `photodrain
    /// serve`), a missing upload endpoint (`not-found`), an answer like a web page's
    /// (`not-a-receiver`: a captive portal or a wrong URL), a receipt without proof
    /// (`unverified-receipt`), and a server certificate that failed verification (permanent
    /// `tls-failure`: self-signed, a private CA not passed with `--ca-file`, another host's name),
    /// and bytes that arrive changed however often they are sent again (`corrupted-in-transit`,
    /// left once an upload's own retries are spent: a broken proxy or network path).
    /// Every photo would fail alike, so none is charged. A handshake that broke off (transient
    /// `tls-failure`) is the network's doing and counts as usual.
    public static func isDestinationRefusal(_ failure: UploadJob.Failure) -> Bool {
        guard failure.domain == TransferError.domain else { return false }
        switch TransferError.Code(rawValue: failure.code) {
        case .unauthorized, .quotaExceeded, .notFound, .notAReceiver, .unverifiedReceipt, .corruptedInTransit: return true
        case .tlsFailure: return !failure.transient
        default: return false
        }
    }
}
