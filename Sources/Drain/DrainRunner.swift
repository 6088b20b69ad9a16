import AssetStore
import Foundation
import Synchronization
import Transfer

/// Settings of the foreground drain.
public struct DrainOptions: Sendable {
    public var slots: Int = 3
    public var bias: SlotBias = .uploadFirst
    public var retryPolicy = RetryPolicy()
    /// With only uploads left and the destination unreachable this long, stop with work remaining.
    public var offlineGiveUp: Duration = .seconds(120)
    /// The first wait between reachability checks while offline; it doubles up to `maxProbeInterval`.
    public var probeInterval: Duration = .seconds(1)
    /// The longest wait between reachability checks while offline.
    public var maxProbeInterval: Duration = .seconds(30)
    /// After a counted upload failure, uploads pause this long, doubling with each further failure
    /// in a row (up to `maxRetryBackoff`) and resetting on a success, so a destination that fails
    /// for a few seconds (a restart behind a proxy, a burst of 503s) cannot use up a photo's attempts.
    public var retryBackoff: Duration = .seconds(1)
    public var maxRetryBackoff: Duration = .seconds(30)
    /// Where uploads go (resumable HTTP or S3); `destination.endpoint` is recorded on each job.
    public var destination: any UploadDestination
    /// Upload files with an `unanalysable` verdict (videos, raws, documents) as they are, with
    /// that verdict; by default they stay in the library only, and count as done.
    public var uploadUnanalysable = false
    /// How often the library is scanned again while the drain works, so photos added meanwhile
    /// are analysed and uploaded in the same run; it is also scanned once more before the drain
    /// would finish. Nil: only the scan at the start.
    public var rescanInterval: Duration? = .seconds(10)
    /// Those scans leave a file changed this recently for later, as it may still be being copied
    /// (a half-copied photo would be analysed, and sent, as it stands); the drain does not finish
    /// while such a file waits. Zero: take files as they are.
    public var quietPeriod: Duration = .seconds(2)
    /// How long the drain, with nothing else left to do, waits for such files to settle before it
    /// stops with `stillChanging` (a file that never stops changing must not hold it for ever).
    public var settleLimit: Duration = .seconds(60)
    /// Make the first scan a full walk (every folder read), which finds files rewritten in place;
    /// later scans are incremental (see `AssetStore.scan(full:fullWalkAfter:)`).
    public var fullScan = false
    /// The longest wait a destination's `Retry-After` (on a 429 or 503) is honoured for in this
    /// run: uploads pause that long and the photo is tried again. A longer ask ends the drain,
    /// once nothing else can be done, with `retryLater`; the photo is charged nothing meanwhile.
    public var retryAfterLimit: Duration = .seconds(60)
    /// Files larger than this wait (a metered network's `--metered-file-limit`); nil: any size.
    public var maxUploadSize: Int64?
    /// Keep running once nothing is left (`drain --watch`): watch every folder of the library
    /// (`LibraryWatcher`) and scan the folders that change, with the rescans every
    /// `rescanInterval` as a safety net, so a photo copied in is analysed and uploaded once it has
    /// settled (`quietPeriod`). Only a stop, a store failure or the destination's refusal ends
    /// such a run: offline it waits for the destination however long (`offlineGiveUp` does not
    /// apply), a `Retry-After` of any length is waited out, a file that never settles is looked
    /// at again every `rescanInterval`, and a library folder that goes away (unmounted, removed)
    /// is waited for, then walked in full. Where the library cannot be watched (no inotify, the
    /// watch limit), the rescans find what the watcher does not, every `rescanInterval` (10 s if nil).
    public var watch = false
    /// While watching, how often a library folder that went away is looked for.
    public var libraryPollInterval: Duration = .seconds(1)
    /// While watching, the least time between two scans of changed folders: the changes of a
    /// copy in progress are taken in batches, not one scan per file.
    public var watchBatchDelay: Duration = .milliseconds(500)
    /// While watching, at most this many folders are watched (tests of the fallback); nil: as
    /// many as the kernel allows.
    public var watchLimit: Int?

    /// Options uploading to `destination`.
    public init(destination: any UploadDestination) { self.destination = destination }
    /// Options uploading to a resumable-upload server.
    public init(configuration: UploadConfiguration) { self.init(destination: ResumableUploader(configuration: configuration)) }
}

/// Why a drain ended.
public enum DrainOutcome: Sendable, Equatable {
    /// Every photo is uploaded or terminally failed.
    case finished
    /// Stopped by a signal; work remains.
    case interrupted(signal: Int32)
    /// Only uploads remain and the destination stayed unreachable.
    case offline(message: String)
    /// The store failed.
    case failed(message: String)
    /// The destination refused an upload for a reason no photo can fix (401/403: a wrong or
    /// missing token; 404: no upload endpoint at that URL; a server certificate that failed
    /// verification). A configuration error: the drain stops, and the photo's attempt is not charged.
    case refused(message: String)
    /// The destination asked (`Retry-After`) to wait until `until` before the next upload, longer
    /// than `DrainOptions.retryAfterLimit`: everything else is done, the photo is charged nothing,
    /// and the next run retries it then.
    case retryLater(until: Date)
    /// Everything else is done, but these files were still changing (being written) for longer
    /// than `DrainOptions.settleLimit`; the next run takes them once they are complete.
    case stillChanging(paths: [String])
}

/// What the drain reports as it goes.
public enum DrainEvent: Sendable {
    case scanned(ScanReport)
    /// A scan while the drain works, or the last one before it finishes (see `rescanInterval`).
    case rescanned(ScanReport)
    /// The destination answered with `Retry-After`: the photo is tried again at `until`, and
    /// uploads pause till then.
    case retryAfter(path: String, until: Date)
    case analysed(path: String, verdict: BankedVerdict, banked: Bool)
    case deferred(path: String, reason: String)
    /// `alreadyStored`: the destination had the content already; no byte was sent.
    case uploaded(path: String, serverID: String?, alreadyStored: Bool = false)
    case uploadFailed(path: String, message: String, terminal: Bool)
    case offline(message: String)
    case online
    /// Watching (`DrainOptions.watch`), nothing is left: the drain waits for the library to
    /// change. `folders` are watched; `limited` says why not every folder is (the rescans find
    /// the rest), or why none is.
    case watching(folders: Int, limited: String?)
    /// Watching: what the watcher saw in `folders` folders, and the scan of them (a full walk
    /// when events were lost or the library came back).
    case changed(folders: Int, report: ScanReport)
    /// Watching: the library folder went away (unmounted, removed); work on it waits.
    case libraryAway
    /// Watching: the library folder is back; a full walk follows.
    case libraryBack
}

/// The foreground runner: `slots` concurrent slots split by `planSlots` on every freed slot,
/// upload-first. Uploads go through upload jobs performed in-process (so an interrupted upload is
/// resumed from the server's offset by the next run); analysis takes slots only when nothing waits
/// for upload or the destination is unreachable. Offline, it keeps analysing, charges no attempts,
/// and resumes uploading when the destination answers again.
///
/// An analysis may use its slot's share of the memory headroom. A photo that needs more stays
/// claimed and is tried again alone once the analyses in flight are done (no other analysis
/// starts meanwhile), with all the headroom after the analyser has handed back what it holds
/// idle; one that does not fit even then stays unanalysed till the next run (see
/// `memoryDeferrals`), and the drain goes on with the others.
public final class DrainRunner: Sendable {
    private let store: AssetStore
    private let analyzer: any PhotoAnalyzing
    private let options: DrainOptions
    private let memory: MemoryGuard
    private let uploader: any UploadDestination
    private let stopFlag = OneShotLatch<Int32>()
    private let worker = Mutex<Task<DrainOutcome, Never>?>(nil)
    private let deferrals = Mutex(MemoryDeferrals())

    /// `analysisAlone`: a photo too big for a slot's share, analysed with no other analysis in flight.
    private enum Kind: Sendable { case analysis, analysisAlone, upload }

    private enum SlotResult: Sendable {
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
    }

    public init(store: AssetStore, analyzer: any PhotoAnalyzing, options: DrainOptions, memory: MemoryGuard = MemoryGuard()) {
        self.store = store
        self.analyzer = analyzer
        self.options = options
        self.memory = memory
        self.uploader = options.destination
    }

    /// The photos this run left unanalysed for memory (read after `run`).
    public var memoryDeferrals: MemoryDeferrals { deferrals.withLock { $0 } }

    /// Stops promptly: uploads in flight are cancelled (their jobs stay resumable, uncharged),
    /// analyses in flight finish or are abandoned.
    public func stop(signal: Int32) {
        stopFlag.complete(signal)
        worker.withLock { $0?.cancel() }
    }

    public func run(events: @escaping @Sendable (DrainEvent) -> Void) async -> DrainOutcome {
        // The guard measures use by the resident set: freed buffers must leave it.
        SystemMemory.returnLargeBuffersWhenFreed()
        let task = Task { await self.loop(events: events) }
        worker.withLock { $0 = task }
        if stopFlag.isCompleted { task.cancel() }
        let outcome = await task.value
        try? store.releaseClaims()
        if let signal = stopFlag.value { return .interrupted(signal: signal) }
        return outcome
    }

    private func loop(events: @escaping @Sendable (DrainEvent) -> Void) async -> DrainOutcome {
        // Watching starts before the first scan: nothing added between the two goes unseen.
        let watcher: LibraryWatcher?
        var watchLimited: String?
        do throws(WatchError) {
            watcher = options.watch
                ? try LibraryWatcher(root: store.root, includeHidden: (try? store.includesHidden()) ?? false, excluding: store.ownPaths,
                                     watchLimit: options.watchLimit, rootPollInterval: options.libraryPollInterval)
                : nil
            watchLimited = watcher?.limitReached
        } catch {
            watcher = nil
            watchLimited = error.message
        }
        // Where the watcher does not see everything, the rescans must.
        var rescanEvery = options.rescanInterval ?? (options.watch && watchLimited != nil ? .seconds(10) : nil)
        do {
            events(.scanned(try store.scan(full: options.fullScan)))
        } catch {
            return .failed(message: error.description)
        }
        if case .storeFailed(let message) = settleLeftovers(events: events) { return .failed(message: message) }
        // A retry an earlier run left waiting for this destination's Retry-After holds uploads back.
        var serverWaitUntil: Date?
        do {
            serverWaitUntil = try store.nextRetryAfter(destination: options.destination.endpoint,
                                                       maxAttempts: options.retryPolicy.maxAttempts, now: Date())
        } catch {
            return .failed(message: error.description)
        }
        var nextRescan = rescanEvery.map { ContinuousClock.now + $0 }
        var settlingSince: ContinuousClock.Instant?  // since when the drain has only waited for files to settle
        // Watching: changes not yet scanned, when the next batch may be, when to look again at
        // files still being written, whether the library is away, and whether "watching" was said.
        var pendingChanges = LibraryChanges()
        var nextBatch = ContinuousClock.now
        var settleCheckAt: ContinuousClock.Instant?
        var libraryAway = false
        var announcedIdle = false
        var online = true
        var offlineSince: ContinuousClock.Instant?
        var nextProbe = ContinuousClock.now
        var probeInterval = options.probeInterval
        var visionAvailable = true
        var uploadAvailable = true
        var failuresInARow = 0
        var uploadsPausedUntil = ContinuousClock.now
        var running: [Kind] = []
        var waitingAlone: [AssetRecord] = []
        var failure: String?
        var refusal: String?

        return await withTaskGroup(of: SlotResult.self) { group -> DrainOutcome in
            while !Task.isCancelled {
                // Watching: what the watcher saw since the last look.
                if let watcher {
                    pendingChanges.merge(watcher.takeChanges())
                    if watchLimited == nil, let reason = watcher.limitReached {
                        watchLimited = reason
                        rescanEvery = rescanEvery ?? .seconds(10)
                        nextRescan = nextRescan ?? .now + .seconds(10)
                    }
                }
                if pendingChanges.wentAway {
                    pendingChanges.wentAway = false
                    if !libraryAway { events(.libraryAway) }
                    libraryAway = true
                }
                if pendingChanges.cameBack {
                    pendingChanges.cameBack = false
                    libraryAway = false
                    events(.libraryBack)
                }
                // Photos added (or changed) while the drain works join this run: the folders the
                // watcher saw change, files still being written once they may have settled, and
                // everything every `rescanEvery`.
                var scan: (folders: Set<[UInt8]>, full: Bool, batch: Int?)?
                if options.watch && !libraryAway {
                    if !pendingChanges.isEmpty && ContinuousClock.now >= nextBatch {
                        scan = (pendingChanges.folders, pendingChanges.fullScan, pendingChanges.folders.count)
                        pendingChanges = LibraryChanges()
                        nextBatch = .now + options.watchBatchDelay
                    } else if let due = settleCheckAt, ContinuousClock.now >= due {
                        scan = ([], false, nil)
                    }
                }
                // A library away is not scanned while the watcher waits for it: it would look empty.
                if scan == nil, let due = nextRescan, ContinuousClock.now >= due, !(libraryAway && watcher != nil) {
                    scan = ([], false, nil)
                }
                if let scan {
                    nextRescan = rescanEvery.map { .now + $0 }
                    switch await rescan(events: events, invalidating: scan.folders, full: scan.full, batch: scan.batch) {
                    case .failure(let error) where options.watch && error.code == .unreadableRoot:
                        if !libraryAway { events(.libraryAway) }
                        libraryAway = true
                    case .failure(let error):
                        failure = error.description
                    case .success(let found):
                        if libraryAway {
                            // Only without a watcher: a scan that works says the library is back.
                            libraryAway = false
                            events(.libraryBack)
                        }
                        if found.newWork {
                            visionAvailable = true
                            uploadAvailable = true
                        }
                        if options.watch {
                            // Files still being written: look again once they may have settled,
                            // soon at first, then (one that never settles) only now and then.
                            if found.settling.isEmpty {
                                (settlingSince, settleCheckAt) = (nil, nil)
                            } else {
                                let since = settlingSince ?? .now
                                settlingSince = since
                                let soon = max(min(options.quietPeriod, .milliseconds(500)), .milliseconds(100))
                                settleCheckAt = .now + (ContinuousClock.now - since < options.settleLimit ? soon : rescanEvery ?? .seconds(10))
                            }
                        }
                    }
                    if failure != nil { break }
                }
                // Offline: check reachability now and then, backing off.
                if !online && ContinuousClock.now >= nextProbe {
                    if await Reachability.isReachable(uploader) {
                        online = true
                        offlineSince = nil
                        probeInterval = options.probeInterval
                        uploadAvailable = true
                        events(.online)
                    } else {
                        probeInterval = min(probeInterval * 2, options.maxProbeInterval)
                        nextProbe = .now + probeInterval
                    }
                }
                let counts: (vision: Int, upload: Int)
                do {
                    counts = (try store.unanalyzedCount(), try store.uploadableCount(includeUnanalysable: options.uploadUnanalysable,
                                                                                        maxSize: options.maxUploadSize))
                } catch {
                    failure = "\(error)"
                    break
                }
                let busy = running.count
                let uploadsPaused = ContinuousClock.now < uploadsPausedUntil || serverWaitUntil.map { Date() < $0 } == true
                let plan = planSlots(budget: options.slots, online: online,
                                     hasVisionWork: !libraryAway && visionAvailable && counts.vision > 0,
                                     hasUploadWork: !libraryAway && uploadAvailable && !uploadsPaused && counts.upload > 0, bias: options.bias)
                let analysisRunning = running.filter { $0 == .analysis }.count
                let aloneRunning = running.contains(.analysisAlone)
                let uploadRunning = running.filter { $0 == .upload }.count
                var started = false
                if busy < options.slots {
                    if uploadRunning < plan.upload {
                        running.append(.upload)
                        group.addTask { await self.uploadSlot(events: events) }
                        started = true
                    } else if !waitingAlone.isEmpty || aloneRunning {
                        // No analysis starts beside one that needs all the headroom.
                        if analysisRunning == 0 && !aloneRunning {
                            let asset = waitingAlone.removeFirst()
                            running.append(.analysisAlone)
                            group.addTask { await self.analysisSlot(alone: asset, events: events) }
                            started = true
                        }
                    } else if analysisRunning < plan.analysis {
                        running.append(.analysis)
                        group.addTask { await self.analysisSlot(events: events) }
                        started = true
                    }
                }
                if started { continue }
                if running.isEmpty && options.watch {
                    // Watching, nothing can start now: wait for a change, the next rescan, or
                    // whatever holds the work that remains (never end the run for it).
                    switch settleLeftovers(events: events) {
                    case .storeFailed(let message)?: failure = message
                    case .some: continue
                    case nil: break
                    }
                    if failure != nil { break }
                    var wakeAt = [settleCheckAt, nextRescan].compactMap { $0 }.min()
                    func wake(by instant: ContinuousClock.Instant) { wakeAt = min(wakeAt ?? instant, instant) }
                    if libraryAway {
                        // The watcher looks for it (without one, the rescans do): nothing else to do.
                        wakeAt = watcher == nil ? nextRescan : nil
                    } else if counts.vision == 0 && counts.upload == 0 {
                        if !announcedIdle { events(.watching(folders: watcher?.folderCount ?? 0, limited: watchLimited)) }
                        announcedIdle = true
                    } else {
                        if let until = serverWaitUntil {
                            if until <= Date() { serverWaitUntil = nil }
                            wake(by: .now + .milliseconds(max(0, Int(until.timeIntervalSinceNow * 1000))))
                        }
                        if !online { wake(by: nextProbe) }
                        if uploadsPausedUntil > .now { wake(by: uploadsPausedUntil) }
                        // Held by another runner, deferred for memory: try again in a while.
                        wake(by: .now + (rescanEvery ?? .seconds(10)))
                    }
                    while !Task.isCancelled {
                        if let watcher { pendingChanges.merge(watcher.takeChanges()) }
                        if pendingChanges.wentAway || pendingChanges.cameBack { break }
                        if !pendingChanges.isEmpty && !libraryAway && ContinuousClock.now >= nextBatch { break }
                        if let wakeAt, ContinuousClock.now >= wakeAt { break }
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                    visionAvailable = true
                    uploadAvailable = true
                    continue
                }
                if running.isEmpty {
                    if counts.vision == 0 && counts.upload == 0 {
                        // Before finishing, look once more: a photo added since the last scan goes too.
                        guard options.rescanInterval != nil else { return .finished }
                        switch await rescan(events: events) {
                        case .failure(let error): return .failed(message: error.description)
                        case .success(let found) where found.newWork:
                            nextRescan = options.rescanInterval.map { ContinuousClock.now + $0 }
                            settlingSince = nil
                            continue
                        case .success(let found) where !found.settling.isEmpty:
                            // A file is still being written: look again once it may have settled,
                            // but not for ever.
                            let since = settlingSince ?? .now
                            settlingSince = since
                            if ContinuousClock.now - since >= options.settleLimit { return .stillChanging(paths: found.settling) }
                            try? await Task.sleep(for: min(options.quietPeriod, .milliseconds(500)))
                            continue
                        case .success: return .finished
                        }
                    }
                    // Nothing of ours in flight: jobs a killed runner finished but never recorded
                    // would otherwise hold their photos forever.
                    switch settleLeftovers(events: events) {
                    case .storeFailed(let message)?: failure = message
                    case .some: continue
                    case nil: break
                    }
                    if failure != nil { break }
                    // The destination asked to wait: wait, up to the limit; a longer ask ends the run.
                    if let until = serverWaitUntil, counts.upload > 0 {
                        let wait = until.timeIntervalSinceNow
                        if wait > 0 {
                            if wait > options.retryAfterLimit.milliseconds / 1000 { return .retryLater(until: until) }
                            try? await Task.sleep(for: .seconds(min(wait, 0.2)))
                            continue
                        }
                        serverWaitUntil = nil
                    }
                    if counts.vision > 0 && visionAvailable == false && counts.upload == 0 {
                        // Photos are held by another runner or deferred for memory: nothing to do here.
                        return .finished
                    }
                    if !online, let since = offlineSince, ContinuousClock.now - since >= options.offlineGiveUp {
                        return .offline(message: "\(options.destination.endpoint) has been unreachable for \(Int(options.offlineGiveUp.components.seconds)) s (--offline-timeout)")
                    }
                    if online && !uploadAvailable && !visionAvailable { return .finished }
                    // Wait for the destination to come back, a retry pause to end, or another
                    // runner to release work.
                    let pause = uploadsPausedUntil - ContinuousClock.now
                    try? await Task.sleep(for: pause > .zero ? min(pause, .milliseconds(200)) : .milliseconds(200))
                    visionAvailable = true
                    uploadAvailable = true
                    continue
                }
                guard let result = await group.next() else { continue }
                switch result {
                case .worked(let kind):
                    running.remove(at: running.firstIndex(of: kind) ?? 0)
                    announcedIdle = false
                    visionAvailable = true
                    uploadAvailable = true
                    if kind == .upload { failuresInARow = 0 }
                case .uploadCharged:
                    running.remove(at: running.firstIndex(of: .upload) ?? 0)
                    announcedIdle = false
                    visionAvailable = true
                    uploadAvailable = true
                    failuresInARow += 1
                    uploadsPausedUntil = .now + Self.backoff(after: failuresInARow, base: options.retryBackoff,
                                                             ceiling: options.maxRetryBackoff)
                case .noWork(let kind):
                    running.remove(at: running.firstIndex(of: kind) ?? 0)
                    if kind == .upload { uploadAvailable = false } else { visionAvailable = false }
                case .needsAlone(let asset):
                    running.remove(at: running.firstIndex(of: .analysis) ?? 0)
                    waitingAlone.append(asset)
                case .offline(let message):
                    running.remove(at: running.firstIndex(of: .upload) ?? 0)
                    if online {
                        online = false
                        offlineSince = .now
                        nextProbe = .now + probeInterval
                        events(.offline(message: message))
                    }
                case .refused(let message):
                    running.remove(at: running.firstIndex(of: .upload) ?? 0)
                    refusal = message
                case .retryAfter(let until):
                    running.remove(at: running.firstIndex(of: .upload) ?? 0)
                    serverWaitUntil = max(serverWaitUntil ?? until, until)
                    visionAvailable = true
                case .storeFailed(let message):
                    failure = message
                }
                if failure != nil || refusal != nil { break }
            }
            group.cancelAll()
            for await _ in group {}
            if let failure { return .failed(message: failure) }
            if let refusal { return .refused(message: refusal) }
            return .finished
        }
    }

    /// The failures that say the destination is misconfigured rather than the photo bad: 401/403
    /// (`unauthorized`), a missing upload endpoint (`not-found`), an answer like a web page's
    /// (`not-a-receiver`: a captive portal or a wrong URL), a receipt without proof
    /// (`unverified-receipt`), and a server certificate that failed verification (permanent
    /// `tls-failure`: self-signed, a private CA not passed with `--ca-file`, another host's name).
    /// Every photo would fail alike, so none is charged. A handshake that broke off (transient
    /// `tls-failure`) is the network's doing and counts as usual.
    public static func isDestinationRefusal(_ failure: UploadJob.Failure) -> Bool {
        guard failure.domain == TransferError.domain else { return false }
        switch TransferError.Code(rawValue: failure.code) {
        case .unauthorized, .notFound, .notAReceiver, .unverifiedReceipt: return true
        case .tlsFailure: return !failure.transient
        default: return false
        }
    }


    /// The pause after `failures` counted upload failures in a row: `base`, doubling, at most `ceiling`.
    static func backoff(after failures: Int, base: Duration, ceiling: Duration) -> Duration {
        guard failures > 0 else { return .zero }
        var pause = base
        for _ in 1..<min(failures, 32) where pause < ceiling { pause = pause * 2 }
        return min(pause, ceiling)
    }

    /// Analyses one photo: a newly claimed one within the slot's share of the headroom, or the
    /// `alone` one (already claimed) within all of it. A photo that does not fit is not released:
    /// its claim keeps the next slot from taking it again in this run (`run` releases it at the end).
    private func analysisSlot(alone: AssetRecord? = nil, events: @escaping @Sendable (DrainEvent) -> Void) async -> SlotResult {
        let store = self.store, analyzer = self.analyzer, memory = self.memory, slots = options.slots
        let kind: Kind = alone == nil ? .analysis : .analysisAlone
        return await onOwnThread("photodrain-drain-analysis") { () -> SlotResult in
            do {
                guard let asset = try alone ?? store.claimUnanalyzed(limit: 1).first else { return .noWork(kind) }
                if alone != nil { analyzer.releaseIdleMemory() }
                let headroom = memory.read().headroom
                switch analyzer.analyze(path: store.absolutePath(of: asset), memoryBudget: alone == nil ? headroom / max(slots, 1) : headroom) {
                case .verdict(let verdict):
                    let banked = try store.bankVerdict(verdict, for: asset)
                    events(.analysed(path: asset.path, verdict: verdict, banked: banked))
                    return .worked(kind)
                case .deferred(let reason, let needs):
                    if alone == nil { return .needsAlone(asset) }
                    self.deferrals.withLock { $0.record(needs: needs) }
                    events(.deferred(path: asset.path, reason: reason))
                    return .worked(kind)
                }
            } catch {
                return .storeFailed("\(error)")
            }
        } ?? .noWork(kind)
    }

    private func uploadSlot(events: @escaping @Sendable (DrainEvent) -> Void) async -> SlotResult {
        let job: UploadJob
        do {
            // A retry whose Retry-After has passed goes back in line now (its failure counted).
            for due in try store.jobs(for: .retry, maxAttempts: options.retryPolicy.maxAttempts, now: Date()) where due.retryNotBefore != nil {
                let path = (try store.asset(for: due))?.path ?? "job \(due.id)"
                try settle(due, path: path, events: events)
            }
            if let waiting = try store.claimJobsToPerform(limit: 1).first {
                job = waiting
            } else {
                guard let asset = try store.claimForUpload(limit: 1, includeUnanalysable: options.uploadUnanalysable,
                                                                     maxSize: options.maxUploadSize).first else { return .noWork(.upload) }
                _ = try store.createJob(for: asset, destination: options.destination.endpoint, inflightLimit: .max)
                guard let created = try store.claimJobsToPerform(limit: 1).first else { return .noWork(.upload) }
                job = created
            }
        } catch {
            return .storeFailed("\(error)")
        }
        let asset = try? store.asset(for: job)
        let path = asset?.path ?? "job \(job.id)"
        let store = self.store
        func release() throws(StoreError) { if let asset { try store.releaseClaim(assetID: asset.id) } }
        let outcome = await JobPerformer(store: store, uploader: uploader).perform(job)
        do {
            switch outcome {
            case .finished(.succeeded):
                try settle(job, path: path, events: events)
                return .worked(.upload)
            case .finished(.failed(_, _, let failure)):
                let current = try store.job(id: job.id) ?? job
                if Self.isDestinationRefusal(failure) {
                    // A wrong token, URL or CA refuses every photo alike: failing them one by one
                    // would mark the whole library failed for good. Put the job back, uncharged.
                    _ = try store.retryJob(current, update: .unchanged, inflightLimit: .max)
                    return .refused("\(failure.code): \(failure.message)")
                }
                // A connection lost because the destination went away (a restart, a crash) is
                // the destination's fault, not the photo's: if it no longer answers, defer.
                if await Reachability.destinationIsAway(after: failure, destination: uploader) {
                    // Unreachable: a deferral. The job goes back as it was, nothing is charged.
                    _ = try store.retryJob(current, update: .unchanged, inflightLimit: .max)
                    return .offline("\(failure.code): \(failure.message)")
                }
                // The destination asked (Retry-After) to wait: the job stays failed and unsettled
                // until then, so the wait charges nothing; the retry counts as the policy says.
                if let until = waitsForRetryAfter(current, asset: asset) {
                    try release()
                    events(.retryAfter(path: path, until: until))
                    return .retryAfter(until)
                }
                try settle(current, path: path, events: events)
                return failure.transient ? .uploadCharged : .worked(.upload)
            case .cancelled(let reason):
                try release()
                events(.uploadFailed(path: path, message: reason, terminal: false))
                // The photo changed or vanished on disk: rescan, so its row is reset (and it is
                // analysed again) instead of being claimed for upload again and again. A library
                // that went away is the watcher's to wait for.
                do throws(StoreError) {
                    events(.scanned(try store.scan(quietPeriod: options.quietPeriod.milliseconds / 1000)))
                } catch where options.watch && error.code == .unreadableRoot {}
                return .worked(.upload)
            case .deferred:
                try release()
                return .noWork(.upload)
            case .storeFailed(let error):
                return .storeFailed("\(error)")
            }
        } catch {
            return .storeFailed("\(error)")
        }
    }

    /// Records a finished job on its photo by the retry policy: a success marks the photo
    /// uploaded; a failure counts, and the job is registered again (keeping its upload URL, to
    /// the back of the queue) or, when permanent or at the limit, the photo is failed. Safe to
    /// repeat: the store only settles a job that is still finished. A failed job whose
    /// destination asked (Retry-After) to wait is left as it is until then. True when it settled.
    @discardableResult
    private func settle(_ performed: UploadJob, path: String, events: @escaping @Sendable (DrainEvent) -> Void) throws(StoreError) -> Bool {
        // The row as it stands now (the caller's copy predates the outcome the performer recorded).
        guard let job = try store.job(id: performed.id), job.state == .succeeded || job.state == .failed else { return false }
        let policy = options.retryPolicy
        if job.state == .succeeded {
            var serverID: String?
            var settled = false
            try store.acknowledgeJob(job) { job, asset in
                let update = policy.update(for: job, asset: asset)
                if case .uploaded(let id, _) = update { serverID = id }
                settled = true
                return update
            }
            if settled { events(.uploaded(path: path, serverID: serverID, alreadyStored: job.alreadyStored)) }
            return settled
        }
        let asset = try store.asset(for: job)
        if waitsForRetryAfter(job, asset: asset) != nil { return false }
        let update = policy.update(for: job, asset: asset)
        if policy.shouldRetry(job, asset: asset) {
            _ = try store.retryJob(job, update: update, inflightLimit: .max)
        } else {
            try store.acknowledgeJob(job) { _, _ in update }
        }
        if case .failure(_, let message, let terminal) = update {
            events(.uploadFailed(path: path, message: message, terminal: terminal))
        }
        return true
    }

    /// When a failed job may be retried, if its server asked (`Retry-After`) to wait past now and
    /// the retry policy would retry it; nil otherwise. Only this drain's destination's ask counts:
    /// after `--to` changes, the new destination is not held back by the old one's.
    private func waitsForRetryAfter(_ job: UploadJob, asset: AssetRecord?) -> Date? {
        guard let until = job.retryNotBefore, until > Date(), job.destination == options.destination.endpoint,
              options.retryPolicy.shouldRetry(job, asset: asset) else { return nil }
        return until
    }

    /// What a scan during the drain found: photos added or changed (new work for this run), and
    /// files left for later because they are still changing.
    private struct Rescan: Sendable {
        var newWork = false
        var settling: [String] = []
    }

    /// Scans the library again (incrementally, with the quiet period; in full with `full`) on a
    /// thread of its own, first marking `folders` to be read whatever their times say, and
    /// reports it: as the scan of a watcher's batch of changes in that many folders when `batch`
    /// is given. A scan that is stopped (the runner was) found nothing.
    private func rescan(events: @escaping @Sendable (DrainEvent) -> Void, invalidating folders: Set<[UInt8]> = [], full: Bool = false,
                        batch: Int? = nil) async -> Result<Rescan, StoreError> {
        let store = self.store, quiet = options.quietPeriod.milliseconds / 1000
        let result = await onOwnThread("photodrain-drain-scan") { () -> Result<ScanReport, StoreError> in
            do throws(StoreError) {
                try store.invalidateFolders(folders)
                return .success(try store.scan(full: full, quietPeriod: quiet))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let report)?:
            events(batch.map { .changed(folders: $0, report: report) } ?? .rescanned(report))
            return .success(Rescan(newWork: !report.changes.added.isEmpty || !report.changes.modified.isEmpty,
                                   settling: report.settling))
        case .failure(let error)?:
            return .failure(error)
        case nil:
            return .success(Rescan())
        }
    }

    /// Settles jobs that finished but were never recorded on their photo: a runner killed between
    /// the server's answer and the acknowledgement leaves them, and nothing else would claim the
    /// photo again. Nil when there were none.
    private func settleLeftovers(events: @escaping @Sendable (DrainEvent) -> Void) -> SlotResult? {
        do {
            var settled = false
            for job in try store.jobs(for: .acknowledge) {
                let path = (try store.asset(for: job))?.path ?? "job \(job.id)"
                if try settle(job, path: path, events: events) { settled = true }
            }
            return settled ? .worked(.upload) : nil
        } catch {
            return .storeFailed("\(error)")
        }
    }
}
