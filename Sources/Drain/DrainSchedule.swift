import AssetStore
import Foundation

/// The runner's state between steps and the decisions made from it, as a value: which slot
/// starts next, what a finished slot changes (offline, backoff after a failure streak, a server's
/// `Retry-After`), when to probe the destination, when to scan again, and what to do when
/// nothing runs (wait, finish, give up offline, leave files still being written for later). The
/// bounds of an analysis-only run (`analyze`, `wake`) are decided here too: how many photos it
/// claims, when it has gone too long without an analysis, when memory is too short to start one.
///
/// It does no I/O and reads no clock: the loop (`DrainRunner.loop`) passes the instants in,
/// performs what it is told, and reports back, so every decision is a truth table in
/// `DrainScheduleTests`, as `planSlots` is in `SlotPlanTests`.
struct DrainSchedule {
    typealias Instant = ContinuousClock.Instant

    let options: DrainOptions
    // Connectivity: offline, the destination is probed, less and less often.
    private(set) var online = true
    private(set) var offlineSince: Instant?
    private(set) var probes: AwayBackoff
    // Upload failures in a row pause uploads, on the same doubling rule as the probes
    // (`AwayBackoff`); a server's Retry-After holds them too.
    private(set) var failuresInARow = 0
    private(set) var uploadRetries: AwayBackoff
    private(set) var uploadsPausedUntil: Instant
    private(set) var serverWaitUntil: Date?
    // A kind of work found empty is not asked for again until something may have changed.
    private(set) var visionAvailable = true
    private(set) var uploadAvailable = true
    private(set) var running: [DrainRunner.Kind] = []
    private(set) var waitingAlone: [AssetRecord] = []
    // Rescans, and files still being written.
    private(set) var rescanEvery: Duration?
    private(set) var nextRescan: Instant?
    private(set) var settlingSince: Instant?
    /// Watching: when to look again at files still being written.
    private(set) var settleCheckAt: Instant?
    /// Watching: changes not yet scanned, and when the next batch of them may be.
    private(set) var pendingChanges = LibraryChanges()
    private(set) var nextBatch: Instant
    /// Watching: the library folder is away (unmounted, removed); its work waits.
    private(set) var libraryAway = false
    /// Watching: the library cannot be watched whole (why), so the rescans find the rest.
    private(set) var watchLimited: String?
    private var announcedIdle = false
    /// The run conditions as last checked (`RunConditionMonitor`), and since when they hold work back.
    private(set) var course: RunConditions.Course = .go(maxUploadSize: nil)
    private(set) var heldSince: Instant?
    // The bounds of an analysis-only run: photos claimed so far (`maxAnalyses`), when an analysis
    // last finished (`expireAfter`), and why memory ended the run (`bailBelowHeadroom`).
    private(set) var analysesStarted = 0
    private(set) var lastAnalysis: Instant
    private(set) var bailed: String?

    /// `serverWaitUntil`: a `Retry-After` an earlier run left for this destination.
    /// `watchLimited`: why the watcher does not see every folder (or could not start).
    init(options: DrainOptions, serverWaitUntil: Date?, watchLimited: String?, now: Instant) {
        self.options = options
        self.serverWaitUntil = serverWaitUntil
        self.watchLimited = watchLimited
        probes = AwayBackoff(first: options.probeInterval, ceiling: options.maxProbeInterval)
        uploadRetries = AwayBackoff(first: options.retryBackoff, ceiling: options.maxRetryBackoff)
        uploadsPausedUntil = now
        nextBatch = now
        lastAnalysis = now
        // Where the watcher does not see everything, the rescans must.
        rescanEvery = options.rescanInterval ?? (options.watch && watchLimited != nil ? .seconds(10) : nil)
        nextRescan = rescanEvery.map { now + $0 }
    }

    var isIdle: Bool { running.isEmpty }

    /// A slot is free: unless one is, `slotToStart` starts nothing and `memoryBail` stops nothing,
    /// so the loop need not count the store's work (nor read the memory) to ask them.
    var hasFreeSlot: Bool { running.count < options.slots }

    // MARK: Watching and rescans

    /// Takes what the watcher saw since the last look. Returns the events to report: the
    /// library went away or came back.
    mutating func watched(_ changes: LibraryChanges, limitReached: String?, now: Instant) -> [DrainEvent] {
        pendingChanges.merge(changes)
        if watchLimited == nil, let limitReached {
            watchLimited = limitReached
            rescanEvery = rescanEvery ?? .seconds(10)
            nextRescan = nextRescan ?? now + .seconds(10)
        }
        var events: [DrainEvent] = []
        if pendingChanges.wentAway {
            pendingChanges.wentAway = false
            if !libraryAway { events.append(.libraryAway) }
            libraryAway = true
        }
        if pendingChanges.cameBack {
            pendingChanges.cameBack = false
            libraryAway = false
            events.append(.libraryBack)
        }
        return events
    }

    /// The scan due now, if any: the folders the watcher saw change (in batches), files still
    /// being written once they may have settled, and everything every `rescanEvery`. A library
    /// away is not scanned while a watcher waits for it: it would look empty.
    mutating func scanDue(now: Instant, hasWatcher: Bool) -> Scan? {
        var scan: Scan?
        if options.watch && !libraryAway {
            if !pendingChanges.isEmpty && now >= nextBatch {
                scan = Scan(folders: pendingChanges.folders, full: pendingChanges.fullScan, batch: pendingChanges.folders.count)
                pendingChanges = LibraryChanges()
                nextBatch = now + options.watchBatchDelay
            } else if let due = settleCheckAt, now >= due {
                scan = Scan()
            }
        }
        if scan == nil, let due = nextRescan, now >= due, !(libraryAway && hasWatcher) {
            scan = Scan()
        }
        if scan != nil { nextRescan = rescanEvery.map { now + $0 } }
        return scan
    }

    /// A scan failed because the library root could not be read: watching, the library is away
    /// (an event to report the first time). Nil: the failure ends the run.
    mutating func scanFoundNoLibrary() -> DrainEvent? {
        guard options.watch else { return nil }
        defer { libraryAway = true }
        return libraryAway ? nil : .libraryAway
    }

    /// A scan during the run worked: new work is asked for again; watching, files still being
    /// written are looked at again soon, then (one that never settles) only now and then.
    /// Returns the event to report when the scan found the library back.
    mutating func scanned(newWork: Bool, settling: [String], now: Instant) -> DrainEvent? {
        var event: DrainEvent?
        if libraryAway {
            // Only without a watcher: a scan that works says the library is back.
            libraryAway = false
            event = .libraryBack
        }
        if newWork {
            workMayHaveChanged()
            lastAnalysis = now
        }
        if options.watch {
            if settling.isEmpty {
                (settlingSince, settleCheckAt) = (nil, nil)
            } else {
                let since = settlingSince ?? now
                settlingSince = since
                let soon = max(min(options.quietPeriod, .milliseconds(500)), .milliseconds(100))
                settleCheckAt = now + (now - since < options.settleLimit ? soon : rescanEvery ?? .seconds(10))
            }
        }
        return event
    }

    /// Something may have changed (a slot finished, a scan found photos): ask the store again.
    mutating func workMayHaveChanged() {
        visionAvailable = true
        uploadAvailable = true
    }

    // MARK: Connectivity

    func probeDue(now: Instant) -> Bool { !online && probes.isDue(now: now) }

    /// The answer of a reachability probe. True when the destination is back.
    mutating func probed(reachable: Bool, now: Instant) -> Bool {
        if reachable {
            online = true
            offlineSince = nil
            probes.answered()
            uploadAvailable = true
            return true
        }
        probes.failed(now: now)
        return false
    }

    // MARK: Run conditions

    /// The conditions as checked now. Returns the event to report when they began or stopped
    /// holding work back; cleared, work is asked for again.
    mutating func conditions(_ now: RunConditions.Course, at instant: Instant) -> DrainEvent? {
        let before = course
        course = now
        guard before.reason != now.reason else { return nil }
        heldSince = now.reason == nil ? nil : heldSince ?? instant
        if now.reason == nil { workMayHaveChanged() }
        return .conditions(held: now.reason)
    }

    // MARK: Slots

    func uploadsPaused(now: Instant, date: Date) -> Bool {
        now < uploadsPausedUntil || serverWaitUntil.map { date < $0 } == true
    }

    /// The slot to start now, if a slot is free and there is work for it (recorded as running).
    /// Upload-first by default (`planSlots`); a photo waiting to be analysed alone starts only
    /// once no other analysis runs, and no analysis starts beside it.
    mutating func slotToStart(work: Work, now: Instant, date: Date) -> Start? {
        guard hasFreeSlot else { return nil }
        let plan = planSlots(budget: options.slots, online: online,
                             hasVisionWork: !libraryAway && course.startsAnalyses && visionAvailable && analysesLeft && work.vision > 0,
                             hasUploadWork: !libraryAway && course.startsUploads && uploadAvailable && !uploadsPaused(now: now, date: date)
                                 && work.upload > 0,
                             bias: options.bias)
        let analysisRunning = running.filter { $0 == .analysis }.count
        let aloneRunning = running.contains(.analysisAlone)
        if running.filter({ $0 == .upload }).count < plan.upload {
            running.append(.upload)
            return .upload
        }
        if !waitingAlone.isEmpty || aloneRunning {
            guard analysisRunning == 0 && !aloneRunning else { return nil }
            running.append(.analysisAlone)
            return .alone(waitingAlone.removeFirst())
        }
        if analysisRunning < plan.analysis {
            running.append(.analysis)
            analysesStarted += 1
            return .analysis
        }
        return nil
    }

    /// What a finished slot changes.
    mutating func record(_ result: DrainRunner.SlotResult, now: Instant) -> Recorded {
        func finished(_ kind: DrainRunner.Kind) {
            if let index = running.firstIndex(of: kind) { running.remove(at: index) }
        }
        switch result {
        case .worked(let kind):
            finished(kind)
            announcedIdle = false
            workMayHaveChanged()
            if kind == .upload {
                // The streak ends; a pause already running runs out (other uploads may be failing).
                failuresInARow = 0
                uploadRetries.answered()
            } else {
                lastAnalysis = now
            }
        case .uploadCharged:
            finished(.upload)
            announcedIdle = false
            workMayHaveChanged()
            failuresInARow += 1
            uploadsPausedUntil = now + uploadRetries.failed(now: now)
        case .noWork(let kind):
            finished(kind)
            if kind == .upload { uploadAvailable = false } else { visionAvailable = false }
            // It claimed nothing: not one of the run's `maxAnalyses`.
            if kind == .analysis { analysesStarted -= 1 }
        case .needsAlone(let asset):
            finished(.analysis)
            waitingAlone.append(asset)
        case .offline(let message):
            finished(.upload)
            guard online else { return .carryOn }
            online = false
            offlineSince = now
            probes.failed(now: now)
            return .wentOffline(message: message)
        case .refused(let message):
            finished(.upload)
            return .end(.refused(message: message))
        case .retryAfter(let until):
            finished(.upload)
            serverWaitUntil = max(serverWaitUntil ?? until, until)
            visionAvailable = true
        case .storeFailed(let message):
            return .end(.failed(message: message))
        case .tick:
            break
        }
        return .carryOn
    }

    // MARK: The bounds of an analysis-only run

    /// Photos may still be claimed for analysis in this run (`maxAnalyses`).
    var analysesLeft: Bool { options.maxAnalyses.map { analysesStarted < $0 } ?? true }

    /// No analysis has finished for `expireAfter`, nor has a scan found new work: stop (`expired`).
    func expired(now: Instant) -> Bool {
        guard let limit = options.expireAfter else { return false }
        return now - lastAnalysis > limit
    }

    /// With the memory headroom measured now: the stop (`memoryExhausted`, why in `bailed`) when
    /// an analysis would start but the headroom is below `bailBelowHeadroom`; nil otherwise.
    mutating func memoryBail(work: Work, headroom: Int, limitSource: String) -> DrainOutcome? {
        guard let floor = options.bailBelowHeadroom, headroom < floor, hasFreeSlot,
              !libraryAway, course.startsAnalyses,
              !waitingAlone.isEmpty || (visionAvailable && analysesLeft && work.vision > 0) else { return nil }
        bailed = bailed ?? "memory headroom \(headroom >> 20) MiB is too small to analyse a photo (limit from \(limitSource))"
        return .memoryExhausted
    }

    // MARK: Nothing running

    /// Nothing runs and nothing is left: without rescans the run is done; with them, the loop
    /// looks once more (a photo added since the last scan goes too) and calls `lastScan`.
    var finishesWithoutLooking: Bool { options.rescanInterval == nil }

    /// What the last look before finishing found. New work: carry on (nil). Files still being
    /// written: wait for them to settle, but not for ever.
    mutating func lastScan(newWork: Bool, settling: [String], now: Instant) -> Idle? {
        if newWork {
            nextRescan = options.rescanInterval.map { now + $0 }
            settlingSince = nil
            lastAnalysis = now
            return nil
        }
        guard !settling.isEmpty else { return .finish(.finished) }
        let since = settlingSince ?? now
        settlingSince = since
        if now - since >= options.settleLimit { return .finish(.stillChanging(paths: settling)) }
        // Waiting for files to settle is not a run gone quiet (`expireAfter`).
        lastAnalysis = now
        return .wait(min(options.quietPeriod, .milliseconds(500)))
    }

    /// Not watching, nothing of ours in flight, leftovers settled, work remaining (or held):
    /// wait out a server's short `Retry-After` (a longer one ends the run), finish when what is
    /// left is held by another runner or deferred, give up after `offlineGiveUp` offline, or wait
    /// for the destination, a retry pause, or another runner to release work.
    mutating func whenIdle(work: Work, now: Instant, date: Date) -> Idle {
        if let until = serverWaitUntil, work.upload > 0 {
            let wait = until.timeIntervalSince(date)
            if wait > 0 {
                if Duration.milliseconds(Int64(wait * 1000)) > options.retryAfterLimit { return .finish(.retryLater(until: until)) }
                return .wait(.milliseconds(Int64(min(wait, 0.2) * 1000)))
            }
            serverWaitUntil = nil
        }
        if work.vision > 0 && (!visionAvailable || !analysesLeft) && work.upload == 0 {
            // Photos are held by another runner or deferred for memory, or this run has claimed
            // its `maxAnalyses`: nothing to do here.
            return .finish(.finished)
        }
        if let reason = course.reason, let since = heldSince {
            // What is left waits for the conditions: as long as the destination would be waited for.
            if now - since >= options.offlineGiveUp { return .finish(.waiting(reason: reason)) }
            workMayHaveChanged()
            return .wait(.milliseconds(200))
        }
        if !online, let since = offlineSince, now - since >= options.offlineGiveUp {
            return .finish(.offline(message: "\(options.destination?.endpoint ?? "the destination") has been unreachable for \(options.offlineGiveUp.components.seconds) s (--offline-timeout)"))
        }
        if online && !uploadAvailable && !visionAvailable { return .finish(.finished) }
        let pause = uploadsPausedUntil - now
        workMayHaveChanged()
        return .wait(pause > .zero ? min(pause, .milliseconds(200)) : .milliseconds(200))
    }

    /// Watching, nothing can start now: when to wake (nil: only for a change the watcher sees),
    /// and whether to say, the first time, that the drain is watching (nothing left).
    mutating func watchWake(work: Work, hasWatcher: Bool, now: Instant, date: Date) -> (at: Instant?, announceWatching: Bool) {
        var wakeAt = [settleCheckAt, nextRescan].compactMap { $0 }.min()
        func wake(by instant: Instant) { wakeAt = min(wakeAt ?? instant, instant) }
        var announce = false
        if libraryAway {
            // The watcher looks for it (without one, the rescans do): nothing else to do.
            wakeAt = hasWatcher ? nil : nextRescan
        } else if work.isEmpty {
            announce = !announcedIdle
            announcedIdle = true
        } else {
            if let until = serverWaitUntil {
                if until <= date { serverWaitUntil = nil }
                wake(by: now + .milliseconds(max(0, Int64(until.timeIntervalSince(date) * 1000))))
            }
            if !online, let next = probes.until { wake(by: next) }
            if uploadsPausedUntil > now { wake(by: uploadsPausedUntil) }
            // Held by the run conditions: look again soon, as the monitor may have cleared them.
            if course.reason != nil { wake(by: now + .seconds(1)) }
            // Held by another runner, deferred for memory: try again in a while.
            wake(by: now + (rescanEvery ?? .seconds(10)))
        }
        workMayHaveChanged()
        return (wakeAt, announce)
    }

    /// Watching, while asleep: whether what the watcher saw is reason to wake now.
    mutating func shouldWake(for changes: LibraryChanges, now: Instant) -> Bool {
        pendingChanges.merge(changes)
        if pendingChanges.wentAway || pendingChanges.cameBack { return true }
        return !pendingChanges.isEmpty && !libraryAway && now >= nextBatch
    }
}
