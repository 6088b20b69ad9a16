import AssetStore
import Drain
import Foundation
import Synchronization
import SystemSupport
import Transfer
import UploadProtocol

/// `photodrain agent DIR`: the transfer service that performs upload jobs.
enum AgentCommand: Command {
    static let spec = CommandSpec(
        name: "agent",
        abstract: "The transfer service: perform the upload jobs wake creates, resuming after restarts.",
        arguments: "DIR",
        discussion: """
        Performs registered jobs --slots at a time with resumable uploads, saving each upload's URL
        and confirmed offset before any byte is sent, and moves them to succeeded or failed for the
        next wake to acknowledge. After a restart it resumes unfinished uploads from the server's
        offset. A job whose destination does not answer (not even a reachability check) is put
        back, uncharged, and the agent waits before the next job: 1 s, doubling up to 30 s while the
        destination stays away. SIGTERM cancels uploads in flight (they stay resumable) and exits 0.
        With --network unmetered or --on-battery defer it checks the conditions every 3 s: while
        they hold (a metered network, battery) it takes no job, and cancels uploads in flight of
        files over 4 MiB (resumed from the server's offset later; smaller ones finish); it goes on
        when they clear.
        Run it as a service; --exit-when-idle makes it stop on its own.

        The agent never reads the library: `wake`, run from a timer, finds new photos, analyses
        them and creates the jobs the agent performs, so the two are the service pair (the
        installed photodrain-wake.timer and photodrain-agent.service). --watch only says what the
        agent does anyway, run until signalled, for symmetry with `drain --watch`; for one process
        that notices new photos itself (inotify) and analyses and uploads them, run
        `photodrain drain DIR --to URL --watch` instead.
        """,
        options: [LibraryOptions.store, TransferOptions.tokenFile, TransferOptions.caFile, TransferOptions.interopVersion] + TransferOptions.s3 + [TransferOptions.acceptUnverified, TransferOptions.bwlimit,
                  .option("slots", "N", "Uploads at once.", default: "\(DrainOptions.defaultSlots)"),
                  .option("exit-when-idle", "SECONDS", "Exit when no job has been seen for this long (default: run until signalled)."),
                  RunConditionOptions.network, RunConditionOptions.onBattery, RunConditionOptions.priority,
                  .flag("watch", "Run until signalled (the default), never --exit-when-idle. New jobs come from wake; drain --watch watches the library itself."),
                  .flag("json", "JSON lines, one per finished job.")],
        positionals: (1, 1),
        examples: [("photodrain agent ~/Pictures --token-file ~/.config/photodrain/token", "as a systemd service runs it")],
        exitCodes: [(0, "stopped by a signal or idle"), (1, "failure (store), the destination refused the jobs (token, URL, certificate, not an upload receiver), or a job named another destination than the library's (dropped, nothing sent)"), (64, "usage error")]
    )

    struct Line: Encodable {
        let job: Int64
        let outcome: String
        var message: String?
    }

    /// The run conditions began or stopped holding uploads back.
    struct ConditionsLine: Encodable {
        let conditions: String
        let message: String
    }

    /// The destination a job names (its `DestinationIdentity`, as wake or drain recorded it), built
    /// with the agent's token, credentials and CAs. An S3 job names its endpoint (or AWS region)
    /// too, used where `--s3-endpoint`/`--s3-region` are not given; either way the job is
    /// sent only where it names: options leading elsewhere fail its jobs with both places named,
    /// instead of marking photos uploaded at a destination that never saw them. A job from before
    /// identities named the endpoint (a bare `s3://BUCKET/PREFIX`) goes where the options say.
    static func jobDestination(_ key: String, settings: UploadDestinations.Settings) throws(TransferError) -> any UploadDestination {
        let parts = DestinationIdentity.parts(of: key)
        var settings = settings
        settings.s3Endpoint = settings.s3Endpoint ?? parts.s3Endpoint
        settings.s3Region = settings.s3Region ?? parts.s3Region
        let destination = try UploadDestinations.make(for: parts.url, settings: settings)
        if !DestinationIdentity.isBareS3(key) && destination.identity.key != AssetStore.destinationKey(key) {
            throw TransferError(.invalidRequest, """
                the job is for \(key), but --s3-endpoint/--s3-region send to \(destination.identity); give the agent the \
                --s3-endpoint and --s3-region wake was given, or none (the job names its endpoint)
                """)
        }
        return destination
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let signals = EarlySignals()
        defer { signals.cancel() }
        let settings = try TransferOptions.settings(arguments)
        var options = AgentOptions(slots: try arguments.int("slots", default: DrainOptions.defaultSlots, range: 1...64)) { (destination: String) throws(TransferError) -> any UploadDestination in
            try jobDestination(destination, settings: settings)
        }
        if arguments.flag("watch") && arguments.string("exit-when-idle") != nil {
            throw UsageError("--watch runs until signalled; it cannot be combined with --exit-when-idle", command: spec.name)
        }
        if arguments.string("exit-when-idle") != nil {
            options.exitWhenIdleFor = .seconds(try arguments.double("exit-when-idle", default: 0, range: 0...86_400))
        }
        let store = try LibraryOptions.open(arguments)
        // The .sqlite file alone holds everything once the command ends, whatever way it ends.
        defer { store.checkpoint() }
        try RunConditionOptions.applyPriority(arguments)
        // A service: conditions that hold uploads back are waited for, at the start as later
        // (checked every few seconds; `status` shows the wait), never an exit.
        options.conditions = try RunConditionOptions.monitor(arguments)
        options.conditions?.start()
        defer { options.conditions?.stop() }
        let runner = AgentRunner(store: store, options: options)
        signals.attach { signal in runner.stop(reason: SignalWatcher.name(signal)) }
        let json = arguments.flag("json")
        let console = Console.shared
        // What the finished jobs came to, and the first refusal by the destination (a wrong token,
        // a web page, a certificate): every job would fail alike, so the agent must not say "done".
        let tally = Mutex<(succeeded: Int, failed: Int, dropped: Int, refusal: String?)>((0, 0, 0, nil))
        let finished = try await runner.run { event in
            let id: Int64, outcome: PerformOutcome
            switch event {
            case .started:
                return
            case .performed(let job, let performed):
                (id, outcome) = (job, performed)
            case .refusedJob(let job, let message):
                tally.withLock { $0.dropped += 1 }
                let line = Line(job: job, outcome: "dropped", message: message)
                if json { console.json(line) } else { console.err("job \(job): \(line.outcome) \(line.message ?? "")") }
                return
            case .conditions(let held):
                let message = held.map { "waiting: \($0); no job is taken, large uploads in flight go back to resume later" }
                    ?? "the run conditions allow uploads again"
                if json { console.json(ConditionsLine(conditions: held == nil ? "clear" : "wait", message: message)) } else { console.err("photodrain agent: \(message)") }
                if let held { try? store.recordDeferral(held) }
                return
            case .destinationAway(let job, let message, let pause):
                let seconds = Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18
                let line = Line(job: job, outcome: "deferred",
                                message: "destination away (\(message)); job kept, uncharged; next try in \(String(format: "%.1f", seconds)) s")
                if json { console.json(line) } else { console.err("job \(job): \(line.outcome) \(line.message ?? "")") }
                return
            }
            let line: Line
            switch outcome {
            case .finished(.succeeded(let status, let serverID, _, let proof, let alreadyStored)):
                var unverified = proof == .unverified ? " (unverified: the destination gave no proof it holds the bytes)" : ""
                if alreadyStored { unverified += " (already on the server: nothing sent)" }
                line = Line(job: id, outcome: "succeeded", message: "\(status) \(TerminalText.escaped(serverID ?? ""))\(unverified)")
                tally.withLock { $0.succeeded += 1 }
            case .finished(.failed(_, _, let failure, _)):
                line = Line(job: id, outcome: "failed", message: "\(failure.code): \(failure.message)")
                tally.withLock { tally in
                    tally.failed += 1
                    if DrainRunner.isDestinationRefusal(failure) { tally.refusal = tally.refusal ?? "\(failure.code): \(failure.message)" }
                }
            case .cancelled(let reason):
                line = Line(job: id, outcome: "cancelled", message: reason)
            case .deferred(let reason):
                line = Line(job: id, outcome: "deferred", message: reason)
            case .storeFailed(let error):
                line = Line(job: id, outcome: "store-failed", message: "\(error)")
            }
            if json { console.json(line) } else { console.err("job \(id): \(line.outcome) \(line.message ?? "")") }
        }
        let outcome = tally.withLock { $0 }
        if !json {
            console.out("agent: \(finished) job\(finished == 1 ? "" : "s") finished: \(outcome.succeeded) succeeded, \(outcome.failed) failed")
        }
        if outcome.dropped > 0 {
            // Jobs only `wake` or `drain` should make named another place: something else writes
            // this store. Nothing was sent; the photos wait for the next wake's jobs.
            console.err("""
                photodrain agent: \(outcome.dropped) job\(outcome.dropped == 1 ? "" : "s") named another destination than the \
                library's and \(outcome.dropped == 1 ? "was" : "were") dropped unperformed (no token or photo sent); the next \
                wake makes new jobs for the library's destination
                """)
            return .failure
        }
        if let refusal = outcome.refusal {
            // The jobs are failed, not the photos: the next wake puts them back, uncharged.
            console.err(TransferOptions.refusalMessage(refusal, command: spec.name))
            return .failure
        }
        return .success
    }
}
