import AssetStore
import Foundation
import PhotoAnalysis

/// Settings of an analysis-only run (`analyze`, `wake`'s analysis).
public struct AnalyzeOptions: Sendable {
    /// Concurrent analyses.
    public var slots: Int = 2
    /// Photos a page holds: with `maxPages`, the run claims `maxPages * pageSize` photos at most.
    public var pageSize: Int = 40
    /// Stop, as if signalled, when no verdict has been banked for this long.
    public var expireAfter: Duration = .seconds(30)
    /// Pages claimed at most (nil: until every photo has a verdict). `wake` analyses one page per
    /// pass, as the seeds' extension does.
    public var maxPages: Int?
    /// Stop (`memoryExhausted`, see `bailed`) the moment the headroom measured before a photo
    /// starts is below this: where memory is the clock, no photo starts that the headroom is
    /// unlikely to fit. Nil: `AnalyzeRunner.leastHeadroom`, a typical photo's cost.
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
    /// Memory headroom ran out: it fell below the floor a photo is started with, or a photo's
    /// analysis did not fit even with no other analysis in flight (it is left unanalysed, see
    /// `memoryDeferrals`); work remains.
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
    /// A stop was requested; in-flight analyses are finishing (`StopGrace`).
    case stopping(reason: AnalyzeOutcome)
}

/// The analysis-only run: the runner (`DrainRunner`, its decisions `DrainSchedule`'s) with
/// uploads off, never the network. It configures that runner from `AnalyzeOptions` and says what
/// it did in analysis's own words; it has no loop of its own. `slots` analyses at once, each photo
/// claimed as a slot frees and its verdict banked the moment it exists, so a kill costs only the
/// analyses in flight; memory as `AnalysisStep` says (a slot's share, alone with all of it,
/// deferred beyond that), and no photo starts below `bailBelowHeadroom`.
public final class AnalyzeRunner: Sendable {
    private let runner: DrainRunner

    /// What a typical photo (12 MP baseline JPEG at 1/4, analysed at 480) costs.
    static let typicalCost = AnalysisCost.estimatedBytes(width: 4000, height: 3000, denominator: 4, analysisShortSide: 480)
    /// The least headroom a run starts a photo with (the typical cost): with less, it stops.
    public static var leastHeadroom: Int { typicalCost }

    public init(store: AssetStore, analyzer: any PhotoAnalyzing, options: AnalyzeOptions, memory: MemoryGuard = MemoryGuard()) {
        var drain = DrainOptions(destination: nil)
        drain.slots = options.slots
        drain.bias = .analysisFirst
        // The caller scanned (and said what it found) just before.
        drain.scanAtStart = false
        drain.rescanInterval = options.rescanInterval
        drain.quietPeriod = options.quietPeriod
        drain.settleLimit = options.settleLimit
        drain.expireAfter = options.expireAfter
        drain.maxAnalyses = options.maxPages.map { $0 * options.pageSize }
        drain.bailBelowHeadroom = options.bailBelowHeadroom ?? Self.leastHeadroom
        runner = DrainRunner(store: store, analyzer: analyzer, options: drain, memory: memory)
    }

    /// The photos this run left unanalysed for memory (read after `run`).
    public var memoryDeferrals: MemoryDeferrals { runner.memoryDeferrals }

    /// The store's error that ended the run `failed` (read after `run`).
    public var storeError: StoreError? { runner.storeError }

    /// Why memory stopped the run before every photo was tried (read after `run`): the headroom
    /// fell below `bailBelowHeadroom`; or, when photos were left for later, how many and the last
    /// one's reason. Nil when memory stopped nothing.
    public var bailed: String? {
        if let bailed = runner.bailed { return bailed }
        let deferrals = runner.memoryDeferrals
        guard let reason = deferrals.lastReason else { return nil }
        return "\(deferrals.count) photo\(deferrals.count == 1 ? "" : "s") left for later (\(reason))"
    }

    /// Asks the run to stop (from a signal handler, say). The first stop or finish wins.
    public func stop(_ reason: AnalyzeOutcome) {
        switch reason {
        case .finished: runner.stop(.finished)
        case .interrupted(let signal): runner.stop(.interrupted(signal: signal))
        case .expired: runner.stop(.expired)
        case .memoryExhausted: runner.stop(.memoryExhausted)
        case .failed(let message): runner.stop(.failed(message: message))
        }
    }

    /// Runs until every photo has a verdict (or `maxPages` are done), a stop, or expiry.
    public func run(events: @escaping @Sendable (AnalyzeEvent) -> Void) async -> AnalyzeOutcome {
        let outcome = await runner.run { event in
            switch event {
            case .analysed(let path, let analysed, let banked, let milliseconds):
                events(.verdict(path: path, analysed: analysed, banked: banked, milliseconds: milliseconds))
            case .deferred(let path, let reason):
                events(.deferred(path: path, reason: reason))
            case .stopping(let reason):
                events(.stopping(reason: Self.outcome(reason, deferrals: 0)))
            default:
                break
            }
        }
        return Self.outcome(outcome, deferrals: runner.memoryDeferrals.count)
    }

    /// The runner's outcome in analysis's words: a run that left photos for memory is
    /// `memoryExhausted`; files still being written past the settle limit are the next run's.
    static func outcome(_ outcome: DrainOutcome, deferrals: Int) -> AnalyzeOutcome {
        switch outcome {
        case .finished, .stillChanging: deferrals > 0 ? .memoryExhausted : .finished
        case .interrupted(let signal): .interrupted(signal: signal)
        case .expired: .expired
        case .memoryExhausted: .memoryExhausted
        case .failed(let message): .failed(message: message)
        // Uploads' ends: a run without a destination or run conditions meets none of them.
        case .offline(let message), .refused(let message), .waiting(let message): .failed(message: message)
        case .retryLater: .failed(message: "the destination asked to wait")
        }
    }
}
