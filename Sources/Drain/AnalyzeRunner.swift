import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization
import SystemSupport

/// Settings of the background analysis runner.
public struct AnalyzeOptions: Sendable {
    /// Concurrent analyses.
    public var slots: Int = 2
    /// Photos claimed from the store at a time.
    public var pageSize: Int = 40
    /// Stop, as if signalled, when no verdict has been banked for this long.
    public var expireAfter: Duration = .seconds(30)
    /// After a stop, how long in-flight analyses may still finish and bank before they are abandoned.
    public var graceAfterStop: Duration = .seconds(1)
    /// Pages claimed at most (nil: until every photo has a verdict). `wake` analyses one page per
    /// pass, as the seeds' extension does.
    public var maxPages: Int?
    /// Stop (`memoryExhausted`, see `bailed`) the moment the headroom measured before a photo is
    /// below this: where memory is the clock (`wake`), no photo starts that the headroom is
    /// unlikely to fit. Nil: a photo that does not fit is deferred, and the run goes on.
    public var bailBelowHeadroom: Int?
    /// The drain's rescan rule (`DrainOptions.rescanInterval`): the library is scanned again this
    /// often while the run works, and once more before it would finish, so photos added meanwhile
    /// are analysed in the same run. Nil (the default, and `wake`'s, which scans each pass itself):
    /// only the caller's scan before the run.
    public var rescanInterval: Duration?
    /// Those scans leave a file changed this recently for later (it may still be being copied);
    /// the run does not finish while such a file waits, up to `settleLimit`.
    public var quietPeriod: Duration = .seconds(2)
    public var settleLimit: Duration = .seconds(60)

    public init(slots: Int = 2, pageSize: Int = 40, expireAfter: Duration = .seconds(30)) {
        self.slots = max(1, slots)
        self.pageSize = max(1, pageSize)
        self.expireAfter = expireAfter
    }
}

/// Why a run ended.
public enum AnalyzeOutcome: Sendable, Equatable {
    /// Every photo has a verdict.
    case finished
    /// A signal arrived; work remains.
    case interrupted(signal: Int32)
    /// No verdict was banked for `expireAfter`; work remains.
    case expired
    /// Memory headroom ran out: no page fits, or a photo's analysis did not fit even with no other
    /// analysis in flight (it is left unanalysed, see `memoryDeferrals`); work remains.
    case memoryExhausted
    /// The store failed.
    case failed(message: String)
}

/// What the runner reports as it goes.
public enum AnalyzeEvent: Sendable {
    /// A verdict was banked (or dropped because the file changed meanwhile: `banked` false).
    case verdict(path: String, analysed: AnalysedPhoto, banked: Bool, milliseconds: Double)
    /// A photo was left for later: its analysis did not fit the memory headroom, even alone.
    case deferred(path: String, reason: String)
    /// A stop was requested; in-flight analyses are finishing.
    case stopping(reason: AnalyzeOutcome)
}

/// The background runner: analysis only, never the network. `slots` threads analyse photos
/// claimed from the store a page at a time and bank each verdict the moment it exists, so a kill
/// costs only the analyses in flight.
///
/// Each analysis may use its slot's share of the memory headroom. A photo that needs more is tried
/// again alone, with all the headroom once the analyser has handed back what it holds idle: at
/// once with one slot, else (still claimed) once every other photo is done. One that does not fit
/// even then is left unanalysed (its claim released at the end) and the run goes on.
public final class AnalyzeRunner: Sendable {
    private let store: AssetStore
    private let analyzer: any PhotoAnalyzing
    private let options: AnalyzeOptions
    private let memory: MemoryGuard
    private let latch = OneShotLatch<AnalyzeOutcome>()

    private struct Shared {
        var queue: [AssetRecord] = []
        var inFlight = 0
        var lastBank = ContinuousClock.now
        var exhausted = false
        /// Claimed photos too big for a slot's share, to analyse alone at the end.
        var alone: [AssetRecord] = []
        var deferrals = MemoryDeferrals()
        /// The reason of the last photo left for later.
        var lastDeferral: String?
        var pagesClaimed = 0
        /// Why the run stopped for memory before every photo was tried, in words.
        var bailed: String?
        /// The store's error behind a `failed` outcome.
        var storeError: StoreError?
        /// Rescans: when the next is due, whether one runs now, since when files wait to settle.
        var nextRescan: ContinuousClock.Instant?
        var scanning = false
        /// A page was claimed since the last scan (a scan is never due twice before a claim).
        var claimedSinceScan = true
        var settlingSince: ContinuousClock.Instant?
    }

    /// What a slot does next.
    private enum Next {
        case analyse(AssetRecord, alone: Bool)
        /// Scan the library (`last`: the look before finishing), then ask again.
        case scan(last: Bool)
        /// Another slot is scanning: ask again shortly.
        case wait
        case done
    }

    private let shared = Mutex(Shared())

    /// What a typical photo (12 MP baseline JPEG at 1/4, analysed at 480) costs, for page sizing.
    static let typicalCost = AnalysisCost.estimatedBytes(width: 4000, height: 3000, denominator: 4, analysisShortSide: 480)
    /// The least headroom a run claims a page with (the typical cost): with less, it stops at once.
    public static var leastHeadroom: Int { typicalCost }

    public init(store: AssetStore, analyzer: any PhotoAnalyzing, options: AnalyzeOptions, memory: MemoryGuard = MemoryGuard()) {
        self.store = store
        self.analyzer = analyzer
        self.options = options
        self.memory = memory
    }

    /// The photos this run left unanalysed for memory (read after `run`).
    public var memoryDeferrals: MemoryDeferrals { shared.withLock { $0.deferrals } }

    /// The store's error that ended the run `failed` (read after `run`).
    public var storeError: StoreError? { shared.withLock { $0.storeError } }

    /// Why memory stopped the run before every photo was tried (read after `run`): no page fitted
    /// the headroom, or it fell below `bailBelowHeadroom`; or, when photos were left for later,
    /// how many and the last one's reason. Nil when memory stopped nothing.
    public var bailed: String? {
        shared.withLock { state in
            if let bailed = state.bailed { return bailed }
            guard let reason = state.lastDeferral else { return nil }
            let count = state.deferrals.count
            return "\(count) photo\(count == 1 ? "" : "s") left for later (\(reason))"
        }
    }

    /// Asks the run to stop (from a signal handler, say). The first stop or finish wins.
    public func stop(_ reason: AnalyzeOutcome) { latch.complete(reason) }

    /// Runs until every photo has a verdict, a stop, or expiry. Blocks the calling thread.
    public func run(events: @escaping @Sendable (AnalyzeEvent) -> Void) -> AnalyzeOutcome {
        shared.withLock {
            $0.lastBank = .now
            $0.nextRescan = options.rescanInterval.map { .now + $0 }
        }
        // The guard measures use by the resident set: where it is tight, freed buffers must leave it.
        memory.prepareForAnalysis()
        let done = DispatchGroup()
        for slot in 0..<options.slots {
            done.enter()
            let thread = Thread { [self] in
                work(events: events)
                done.leave()
            }
            thread.name = "photodrain-analyze-\(slot)"
            thread.start()
        }
        // Watch for expiry and for the workers running dry.
        while !latch.isCompleted {
            if done.wait(timeout: .now() + .milliseconds(50)) == .success { break }
            let idle = shared.withLock { ContinuousClock.now - $0.lastBank }
            if idle > options.expireAfter { latch.complete(.expired) }
        }
        if let reason = latch.value, reason != .finished {
            events(.stopping(reason: reason))
            let grace = options.graceAfterStop.components
            let deadline = DispatchTime.now() + .milliseconds(Int(grace.seconds * 1000 + grace.attoseconds / 1_000_000_000_000_000))
            _ = done.wait(timeout: deadline)
        }
        if memoryDeferrals.count > 0 { latch.complete(.memoryExhausted) }
        // Claims not finished go back at once, so the next run (or another runner) takes them.
        try? store.releaseClaims()
        latch.complete(.finished)
        return latch.value ?? .finished
    }

    private func work(events: @Sendable (AnalyzeEvent) -> Void) {
        while !latch.isCompleted {
            let asset: AssetRecord
            let alone: Bool
            switch nextAsset() {
            case .done: return
            case .wait:
                Thread.sleep(forTimeInterval: 0.02)
                continue
            case .scan(let last):
                rescan(last: last)
                continue
            case .analyse(let claimed, let claimedAlone): (asset, alone) = (claimed, claimedAlone)
            }
            if let floor = options.bailBelowHeadroom, case let headroom = memory.read().headroom, headroom < floor {
                // Left claimed: the claims still held go back when the run ends.
                shared.withLock {
                    $0.inFlight -= 1
                    $0.bailed = $0.bailed ?? "memory headroom dropped to \(headroom >> 20) MiB"
                }
                latch.complete(.memoryExhausted)
                return
            }
            let outcome: AnalysisStep.Outcome
            do {
                outcome = try AnalysisStep(store: store, analyzer: analyzer, memory: memory, slots: options.slots).run(asset, alone: alone)
            } catch {
                shared.withLock { $0.storeError = $0.storeError ?? error }
                latch.complete(.failed(message: "\(error)"))
                return
            }
            switch outcome {
            case .banked(let verdict, let banked, let milliseconds):
                shared.withLock {
                    $0.inFlight -= 1
                    $0.lastBank = .now
                }
                events(.verdict(path: asset.path, analysed: verdict, banked: banked, milliseconds: milliseconds))
            case .needsAlone:
                shared.withLock {
                    $0.inFlight -= 1
                    $0.alone.append(asset)
                }
            case .deferred(let reason, let needs):
                shared.withLock {
                    $0.inFlight -= 1
                    $0.deferrals.record(needs: needs)
                    $0.lastDeferral = reason
                }
                events(.deferred(path: asset.path, reason: reason))
            }
        }
    }

    /// Scans the library again (the drain's rule, `rescanInterval`), off the lock. New photos
    /// are claimed by the next page; after the last look, files still being written are waited
    /// for (up to `settleLimit`), and with nothing new the run is done.
    private func rescan(last: Bool) {
        let report: ScanReport
        do throws(StoreError) {
            report = try store.scan(quietPeriod: options.quietPeriod.milliseconds / 1000, rehash: FileReader.sha256Hex)
        } catch {
            shared.withLock {
                $0.scanning = false
                $0.storeError = $0.storeError ?? error
            }
            latch.complete(.failed(message: "\(error)"))
            return
        }
        let newWork = !report.changes.added.isEmpty || !report.changes.modified.isEmpty
        let settle = shared.withLock { state -> Bool in
            state.scanning = false
            state.nextRescan = options.rescanInterval.map { .now + $0 }
            if newWork {
                state.settlingSince = nil
                state.lastBank = .now
                return false
            }
            guard last else { return false }
            if !report.settling.isEmpty {
                let since = state.settlingSince ?? .now
                state.settlingSince = since
                if ContinuousClock.now - since < options.settleLimit { return true }
            }
            state.exhausted = true
            return false
        }
        // Files still being written: look again once they may have settled.
        if settle {
            shared.withLock { $0.lastBank = .now }
            Thread.sleep(forTimeInterval: Double(min(options.quietPeriod, .milliseconds(500)).milliseconds) / 1000)
        }
    }

    /// The next claimed photo, claiming a new page when the queue is empty; once no page is left,
    /// a photo to analyse alone (`alone` true) when no other analysis is in flight. A rescan when
    /// one is due (before a page, and before the run would finish). Done when none remain for this
    /// slot: a photo waiting to be analysed alone is taken by the slot still in flight.
    private func nextAsset() -> Next {
        // One claimer at a time keeps pages whole; the store's own transaction guards other processes.
        shared.withLock { state -> Next in
            if state.queue.isEmpty && !state.exhausted && state.pagesClaimed >= options.maxPages ?? .max {
                state.exhausted = true
            }
            if state.queue.isEmpty && state.scanning { return .wait }
            if state.queue.isEmpty && !state.exhausted && state.claimedSinceScan, let due = state.nextRescan, ContinuousClock.now >= due {
                state.scanning = true
                state.claimedSinceScan = false
                return .scan(last: false)
            }
            if state.queue.isEmpty && !state.exhausted {
                // Pages shrink with the memory headroom; none fits at all: stop, work remains.
                let reading = memory.read()
                let page = MemoryGuard.pageSize(headroom: reading.headroom, typicalCost: Self.typicalCost,
                                                slots: options.slots, maximum: options.pageSize)
                guard page > 0 else {
                    if (try? store.unanalyzedCount()) ?? 1 > 0 {
                        state.bailed = state.bailed ?? "memory headroom \(reading.headroom >> 20) MiB is too small to analyse a photo (limit from \(reading.source))"
                        latch.complete(.memoryExhausted)
                    } else {
                        state.exhausted = true
                    }
                    return .done
                }
                do throws(StoreError) {
                    state.queue = try store.claimUnanalyzed(limit: page)
                    state.pagesClaimed += 1
                    state.claimedSinceScan = true
                } catch {
                    state.storeError = state.storeError ?? error
                    latch.complete(.failed(message: "\(error)"))
                    return .done
                }
                if state.queue.isEmpty {
                    // Before finishing, look once more: a photo added since the last scan goes too.
                    guard options.rescanInterval == nil else {
                        state.scanning = true
                        state.claimedSinceScan = false
                        return .scan(last: true)
                    }
                    state.exhausted = true
                }
            }
            if state.queue.isEmpty {
                guard state.inFlight == 0, !state.alone.isEmpty else { return .done }
                state.inFlight += 1
                return .analyse(state.alone.removeFirst(), alone: true)
            }
            state.inFlight += 1
            return .analyse(state.queue.removeFirst(), alone: false)
        }
    }
}
