import AssetStore
import Foundation
import PhotoAnalysis
import Transfer


/// Settings of the foreground drain.
public struct DrainOptions: Sendable {
    /// The defaults the runners start from, written once: the CLI's help shows them and its
    /// parsing falls back to them.
    public static let defaultSlots = 3
    public static let defaultOfflineGiveUpSeconds: Double = 120
    public static let defaultRescanIntervalSeconds: Double = 10

    public var slots: Int = DrainOptions.defaultSlots
    public var bias: SlotBias = .uploadFirst
    public var retryPolicy = RetryPolicy()
    /// With only uploads left and the destination unreachable this long, stop with work remaining.
    public var offlineGiveUp: Duration = .seconds(DrainOptions.defaultOfflineGiveUpSeconds)
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
    /// Nil: the runner only analyses (`analyze`, `wake`'s analysis): no upload slot, no probe,
    /// no upload job touched.
    public var destination: (any UploadDestination)?
    /// Upload files with an `unanalysable` verdict (videos, raws, documents) as they are, with
    /// that verdict; by default they stay in the library only, and count as done.
    public var uploadUnanalysable = false
    /// How often the library is scanned again while the drain works, so photos added meanwhile
    /// are analysed and uploaded in the same run; it is also scanned once more before the drain
    /// would finish. Nil: only the scan at the start.
    public var rescanInterval: Duration? = .seconds(DrainOptions.defaultRescanIntervalSeconds)
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
    /// The run conditions, re-checked while the drain runs: while they hold uploads back (a
    /// metered network with `--network unmetered`, battery with `--on-battery defer`, which holds
    /// analyses too) no upload starts and the monitor cancels large ones in flight; the drain goes
    /// on when they clear. Nil: none asked for (`maxUploadSize` alone, fixed for the run).
    public var conditions: RunConditionMonitor?

    /// Scan the library when the run starts. Off where the caller has just scanned it (`analyze`
    /// reports its own scan before the run, `wake` scans each pass).
    public var scanAtStart = true
    /// Stop (`expired`) when no analysis has finished for this long: `analyze --expire-after`,
    /// a run that makes no progress gives the machine back. Nil: never.
    public var expireAfter: Duration?
    /// Photos claimed for analysis at most in this run (`wake`: one page a pass); nil: all.
    public var maxAnalyses: Int?
    /// Stop (`memoryExhausted`) rather than start an analysis while the memory headroom is below
    /// this: where running out of memory ends the run (`analyze`, `wake`), no photo starts that
    /// the headroom is unlikely to fit. Nil (`drain`): start it; a photo that does not fit is
    /// deferred, and the run goes on.
    public var bailBelowHeadroom: Int?

    /// Options uploading to `destination` (nil: analysis only).
    public init(destination: (any UploadDestination)?) { self.destination = destination }
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
    /// The run conditions held back all that is left (uploads, or everything on battery) for
    /// `offlineGiveUp`, not watching: the next run goes on, nothing was charged.
    case waiting(reason: String)
    /// No analysis finished for `DrainOptions.expireAfter`; work remains.
    case expired
    /// The memory headroom fell below `DrainOptions.bailBelowHeadroom`; work remains.
    case memoryExhausted
}

/// What the drain reports as it goes.
public enum DrainEvent: Sendable {
    case scanned(ScanReport)
    /// A scan while the drain works, or the last one before it finishes (see `rescanInterval`).
    case rescanned(ScanReport)
    /// The destination answered with `Retry-After`: the photo is tried again at `until`, and
    /// uploads pause till then.
    case retryAfter(path: String, until: Date)
    /// A verdict was made, in `milliseconds`, and banked (false: the file changed meanwhile).
    case analysed(path: String, analysed: AnalysedPhoto, banked: Bool, milliseconds: Double)
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
    /// The run conditions now hold work back (why: uploads; analyses too on battery), or no
    /// longer do (nil). Large uploads in flight were cancelled, their jobs left to resume.
    case conditions(held: String?)
    /// The run was asked to stop (`DrainRunner.stop`): nothing new starts, and what is in flight
    /// finishes by the stop rule (`StopGrace`).
    case stopping(reason: DrainOutcome)
}
