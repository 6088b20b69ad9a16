import AssetStore
import Foundation
import Synchronization

/// What analysing one photo gave.
public enum AnalysisResult: Sendable, Equatable {
    /// A verdict to bank (for an undecodable photo, a terminal verdict holding its error).
    case verdict(BankedVerdict)
    /// Not analysed now (its decode would not fit the memory budget even at 1/8): try later.
    case deferred(reason: String)
}

/// Computes a photo's verdict. Never throws: a photo that cannot be analysed gets a terminal
/// verdict holding its error, so it is not retried until the file changes.
public protocol PhotoAnalyzing: Sendable {
    /// Analyses the photo at `path` within `memoryBudget` bytes (nil: no limit); the DCT scale
    /// steps down to fit before the photo is deferred.
    func analyze(path: String, memoryBudget: Int?) -> AnalysisResult
}

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
    /// Memory headroom ran out: even the smallest decode of a photo would not fit; work remains.
    case memoryExhausted
    /// The store failed.
    case failed(message: String)
}

/// What the runner reports as it goes.
public enum AnalyzeEvent: Sendable {
    /// A verdict was banked (or dropped because the file changed meanwhile: `banked` false).
    case verdict(path: String, verdict: BankedVerdict, banked: Bool, milliseconds: Double)
    /// A photo was left for later (memory).
    case deferred(path: String, reason: String)
    /// A stop was requested; in-flight analyses are finishing.
    case stopping(reason: AnalyzeOutcome)
}

/// The background runner: analysis only, never the network. `slots` threads analyse photos
/// claimed from the store a page at a time and bank each verdict the moment it exists, so a kill
/// costs only the analyses in flight.
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
        var deferred = 0
    }

    private let shared = Mutex(Shared())

    /// What a typical photo (12 MP baseline JPEG at 1/4, analysed at 480) costs, for page sizing.
    static let typicalCost = MemoryGuard.estimatedCost(width: 4000, height: 3000, denominator: 4, analysisShortSide: 480)

    public init(store: AssetStore, analyzer: any PhotoAnalyzing, options: AnalyzeOptions, memory: MemoryGuard = MemoryGuard()) {
        self.store = store
        self.analyzer = analyzer
        self.options = options
        self.memory = memory
    }

    /// Asks the run to stop (from a signal handler, say). The first stop or finish wins.
    public func stop(_ reason: AnalyzeOutcome) { latch.complete(reason) }

    /// Runs until every photo has a verdict, a stop, or expiry. Blocks the calling thread.
    public func run(events: @escaping @Sendable (AnalyzeEvent) -> Void) -> AnalyzeOutcome {
        shared.withLock { $0.lastBank = .now }
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
        // Claims not finished go back at once, so the next run (or another runner) takes them.
        try? store.releaseClaims()
        latch.complete(.finished)
        return latch.value ?? .finished
    }

    private func work(events: @Sendable (AnalyzeEvent) -> Void) {
        while !latch.isCompleted {
            guard let asset = nextAsset() else { return }
            let clock = ContinuousClock()
            let start = clock.now
            // Each slot may use its share of the headroom.
            let budget = memory.read().headroom / options.slots
            let result = analyzer.analyze(path: store.absolutePath(of: asset), memoryBudget: budget)
            let elapsed = (clock.now - start)
            guard case .verdict(let verdict) = result else {
                if case .deferred(let reason) = result {
                    events(.deferred(path: asset.path, reason: reason))
                    shared.withLock { $0.inFlight -= 1; $0.deferred += 1 }
                    // Nothing fits now: stop with work remaining instead of being killed.
                    latch.complete(.memoryExhausted)
                }
                return
            }
            let banked: Bool
            do {
                banked = try store.bankVerdict(verdict, for: asset)
            } catch {
                latch.complete(.failed(message: "\(error)"))
                return
            }
            shared.withLock {
                $0.inFlight -= 1
                $0.lastBank = .now
            }
            let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            events(.verdict(path: asset.path, verdict: verdict, banked: banked, milliseconds: ms))
        }
    }

    /// The next claimed photo, claiming a new page when the queue is empty; nil when none remain.
    private func nextAsset() -> AssetRecord? {
        // One claimer at a time keeps pages whole; the store's own transaction guards other processes.
        shared.withLock { state -> AssetRecord? in
            if state.queue.isEmpty && !state.exhausted {
                // Pages shrink with the memory headroom; none fits at all: stop, work remains.
                let page = MemoryGuard.pageSize(headroom: memory.read().headroom, typicalCost: Self.typicalCost,
                                                slots: options.slots, maximum: options.pageSize)
                guard page > 0 else {
                    latch.complete(.memoryExhausted)
                    return nil
                }
                do {
                    state.queue = try store.claimUnanalyzed(limit: page)
                } catch {
                    latch.complete(.failed(message: "\(error)"))
                    return nil
                }
                if state.queue.isEmpty { state.exhausted = true }
            }
            guard !state.queue.isEmpty else { return nil }
            state.inFlight += 1
            return state.queue.removeFirst()
        }
    }
}
