import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization
import Transfer
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
    let store: AssetStore
    let analyzer: any PhotoAnalyzing
    let options: DrainOptions
    let memory: MemoryGuard
    let uploader: any UploadDestination
    let stopFlag = OneShotLatch<Int32>()
    let worker = Mutex<Task<DrainOutcome, Never>?>(nil)
    let deferrals = Mutex(MemoryDeferrals())

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
}
