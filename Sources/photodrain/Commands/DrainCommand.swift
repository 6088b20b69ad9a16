import AssetStore
import Drain
import Foundation
import Synchronization
import SystemSupport
import Transfer

/// `photodrain drain DIR --to URL`: the foreground runner.
enum DrainCommand: Command {
    static let spec = CommandSpec(
        name: "drain",
        abstract: "Upload a library, analysing stragglers: \(DrainOptions.defaultSlots) slots, upload-first, resumable, deduplicated.",
        arguments: "DIR",
        discussion: """
        Scans DIR, then splits --slots between upload and analysis on every freed slot: while any
        analysed photo waits and the destination answers, every slot uploads; analysis runs when
        nothing waits for upload or the destination is unreachable. Each upload carries the photo's
        verdict and content hash; an interrupted upload resumes from the server's offset on the next
        run. Transient failures rotate and count (the photo fails after --max-attempts), and each
        one in a row pauses uploads longer (1 s, 2 s, 4 s ... up to 30 s); permanent ones fail it at
        once; an unreachable destination (no HTTP answer at all) charges nothing. A 429 or 503 with
        Retry-After pauses uploads that long (up to --retry-after-limit) before the photo is tried
        again; a longer ask ends the run with exit 75 once analysis is done, charging nothing, and
        `status` shows when the retry is due.

        While it works, drain scans DIR again every --rescan-interval seconds, and once more before
        it would finish, so photos copied in meanwhile are analysed and uploaded in the same run.
        Those scans leave a file changed in the last 2 seconds for later (it may be half copied),
        and drain does not finish while one waits; a file still changing after a minute more ends
        the run with exit 75 (run again once it is complete).

        With --watch, drain does not finish when nothing is left: it watches every folder of DIR
        (inotify; folders created later too, hidden ones not) and scans the folders where something
        changed, so a photo copied in is analysed and uploaded once it has not changed for 2 s. It
        says "watching N folders for new photos" each time it goes idle, and one line per batch of
        changes. The rescans every --rescan-interval go on as a safety net; where the library
        cannot be watched in full (the kernel's fs.inotify.max_user_watches is reached, or no
        inotify) they find what the watches do not, and when the kernel drops events (too many at
        once) the whole library is read again. An unreachable destination, a long Retry-After or a
        file that never settles do not end a watching run: it waits (--offline-timeout and
        --retry-after-limit do not apply). If DIR goes away (unmounted, removed), drain waits for it
        to come back (for a mount point, for something to be mounted on it again), then reads it
        in full. SIGTERM or SIGINT ends it with the usual summary: exit 0 when nothing is left, 75
        when work remains (uploads in flight stay resumable; verdicts are kept).

        """ + LibraryOptions.scanDiscussion + "\n" + LibraryOptions.filterDiscussion,
        options: [LibraryOptions.store] + LibraryOptions.filters + [LibraryOptions.dryRun, LibraryOptions.rescan, LibraryOptions.includeHidden] + TransferOptions.all + [TransferOptions.newDestination,
            .option("slots", "N", "Concurrent uploads and analyses.", default: "\(DrainOptions.defaultSlots)"),
            .option("bias", "upload-first|analysis-first", "Which work takes the slots when both wait.", default: "upload-first"),
            .option("max-attempts", "N", "Counted failures before a photo is failed.", default: "\(RetryPolicy.defaultMaxAttempts)"),
            .flag("retry-failed", "Give photos that failed for good another chance (after fixing the destination or token)."),
            .flag("upload-unanalysable", "Upload files that are not photos PhotoDrain analyses (videos, raws, documents) as they are, with their 'unanalysable' verdict; without it they stay put and count as done."),
            .flag("watch", "Keep running: watch the library for new photos and analyse and upload each once it has settled, until SIGTERM or SIGINT."),
            .option("offline-timeout", "SECONDS", "With only uploads left and the destination unreachable this long, stop (exit 75). Not with --watch, which waits for the destination however long.", default: "\(Int(DrainOptions.defaultOfflineGiveUpSeconds))"),
            .option("rescan-interval", "SECONDS", "Scan the library again this often while draining, and once before finishing, so photos added meanwhile go in this run; 0: only the scan at the start. With --watch, a safety net beside the watches (0 there: none, or 10 s where the library cannot be watched in full).", default: "\(Int(DrainOptions.defaultRescanIntervalSeconds))"),
            .option("retry-after-limit", "SECONDS", "Wait at most this long when the destination answers 429/503 with Retry-After; a longer ask stops the drain (exit 75) with the retry due then; with --watch it waits however long.", default: "60"),
        ] + RunConditionOptions.uploading + AnalysisOptions.all + [.flag("json", "JSON lines: one per event, then a summary.")],
        positionals: (1, 1),
        examples: [
            ("photodrain drain ~/Pictures --to http://127.0.0.1:8080/uploads", "to a local photodrain serve"),
            ("photodrain drain ~/Pictures --to https://photos.example/uploads --token-file ~/.config/photodrain/token", "with a token"),
            ("photodrain drain ~/Pictures --to s3://photos/library", "to S3 (AWS credentials from the environment)"),
            ("photodrain drain ~/Pictures --to URL --dry-run --json | jq -r 'select(.event == \"would-upload\") .path'", "what would be sent"),
            ("photodrain drain ~/Pictures --to URL --rescan", "after photos were edited in place: read every folder, not only changed ones"),
            ("photodrain drain ~/Pictures --to URL --watch --rescan-interval 600", "as a service: upload new photos as they arrive"),
        ] + LibraryOptions.filterExamples("drain"),
        exitCodes: [(0, "every photo uploaded or terminally failed (with --watch: so when a signal stopped it)"), (1, "failure (store, cascade, model), the destination refused the upload (token, URL, certificate), or no progress possible (memory too small)"),
                    (64, "usage error"), (75, "interrupted, the destination stayed unreachable, or it asked (Retry-After) to wait longer than --retry-after-limit: run again")]
    )

    struct EventLine: Encodable {
        let event: String
        var path: String?
        var serverID: String?
        var label: String?
        var faces: Int?
        var message: String?
        var terminal: Bool?
        /// For `uploaded`: the destination had the content already; nothing was sent.
        var alreadyStored: Bool?
        /// For `watching` and `changed`: how many folders.
        var folders: Int?
    }

    struct Summary: Encodable {
        let event = "summary"
        var analysed: Int
        var uploaded: Int
        /// Of `uploaded`: photos the destination already held (no byte sent).
        var alreadyOnTheServer: Int
        var failed: Int
        var counts: StatusCounts
        var seconds: Double
        var outcome: String
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let signals = EarlySignals()
        defer { signals.cancel() }
        let destination = try TransferOptions.destination(arguments)
        var options = DrainOptions(destination: destination)
        options.slots = try arguments.int("slots", default: DrainOptions.defaultSlots, range: 1...64)
        let biasText = arguments.string("bias") ?? SlotBias.uploadFirst.rawValue
        guard let bias = SlotBias(rawValue: biasText) else {
            throw UsageError("--bias wants upload-first or analysis-first, not '\(biasText)'", command: spec.name)
        }
        options.bias = bias
        options.retryPolicy = RetryPolicy(maxAttempts: try arguments.int("max-attempts", default: RetryPolicy.defaultMaxAttempts, range: 1...1000))
        options.offlineGiveUp = .seconds(try arguments.double("offline-timeout", default: DrainOptions.defaultOfflineGiveUpSeconds, range: 0...86_400))
        options.uploadUnanalysable = arguments.flag("upload-unanalysable")
        options.rescanInterval = try LibraryOptions.rescanInterval(arguments)
        options.fullScan = arguments.flag("rescan")
        options.retryAfterLimit = .seconds(try arguments.double("retry-after-limit", default: 60, range: 0...86_400))
        options.watch = arguments.flag("watch")
        if arguments.flag("dry-run") {
            let store = try LibraryOptions.open(arguments, dryRun: true)
            try DryRunOutput.run(store, command: spec.name, upload: true, uploadUnanalysable: options.uploadUnanalysable,
                                 json: arguments.flag("json"))
            return .success
        }
        let memory = try AnalysisOptions.memoryGuard(arguments)
        let pipeline = try AnalysisOptions.pipeline(arguments)
        let store = try LibraryOptions.open(arguments)
        // The .sqlite file alone holds everything once the command ends, whatever way it ends.
        defer { store.checkpoint() }
        _ = try TransferOptions.useDestination(destination.identity, url: destination.endpoint, store: store, arguments: arguments)
        try RunConditionOptions.applyPriority(arguments)
        switch try RunConditionOptions.decide(arguments, store: store, uploads: true) {
        case .wait: return .workRemains
        case .go(let maxUploadSize, _): options.maxUploadSize = maxUploadSize
        }
        // Checked again every few seconds while the drain runs.
        options.conditions = try RunConditionOptions.monitor(arguments)
        options.conditions?.start()
        defer { options.conditions?.stop() }
        if arguments.flag("retry-failed") {
            let count = try store.resetFailures()
            Console.shared.err("\(count) failed photo\(count == 1 ? "" : "s") will be tried again")
        }
        let json = arguments.flag("json")
        let console = Console.shared
        let endpoint = destination.endpoint, offlineSeconds = Int(options.offlineGiveUp.components.seconds)
        let watching = options.watch, safetyNet = options.rescanInterval.map { Double($0.components.seconds) } ?? 10
        let runner = DrainRunner(store: store, analyzer: pipeline, options: options, memory: memory)
        signals.attach { signal in runner.stop(signal: signal) }

        let before = try store.counts()
        let bar = ProgressBar(title: "draining", total: before.total - before.uploaded - before.failed, quiet: json)
        let tally = Mutex((analysed: 0, uploaded: 0, failed: 0, alreadyThere: 0))
        // The last rescan's summary: one that says the same again (a copy still settling) is not repeated.
        let lastRescan = Mutex("")
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = await runner.run { event in
            var line: EventLine?
            switch event {
            case .scanned(let report):
                for problem in report.problems { console.err("skipped \(problem.path): \(problem.message)") }
                if let counts = try? store.counts() { bar.setTotal(counts.total - counts.uploaded - counts.failed) }
                if !json {
                    console.err("\(report.photoCount) photos: \(report.changes.added.count) new, \(report.changes.modified.count) changed, \(report.changes.removed.count) removed")
                }
            case .rescanned(let report):
                guard !report.changes.isEmpty || !report.problems.isEmpty || !report.settling.isEmpty else { return }
                if let counts = try? store.counts() { bar.setTotal(counts.total - counts.uploaded - counts.failed + tally.withLock { $0.uploaded + $0.failed }) }
                let settling = report.settling.isEmpty ? "" : "; \(report.settling.count) still being written, taken once they settle"
                let summary = "\(report.changes.added.count) new, \(report.changes.modified.count) changed, \(report.changes.removed.count) removed\(settling)"
                guard lastRescan.withLock({ last in defer { last = summary }; return last != summary || !report.changes.isEmpty }) else { return }
                if !json { console.err("scanned again: \(summary)") }
                line = EventLine(event: "rescanned", message: summary)
            case .retryAfter(let path, let until):
                line = EventLine(event: "retry-after", path: path, message: isoTimestamp(until.timeIntervalSince1970))
                if !json { console.err("\(path): the destination asked to wait; retrying at \(isoTimestamp(until.timeIntervalSince1970) ?? "?")") }
            case .analysed(let path, let analysed, let banked, _):
                guard banked else { return }
                tally.withLock { $0.analysed += 1 }
                let verdict = analysed.verdict
                line = EventLine(event: "analysed", path: path, label: verdict.label.rawValue, faces: verdict.confirmedFaces,
                                 message: verdict.error?.code)
                bar.advance(by: 0, status: "analysed \(tally.withLock { $0.analysed })")
            case .deferred(let path, let reason):
                line = EventLine(event: "deferred", path: path, message: reason)
                if !json { console.err("\(path): deferred: \(reason)") }
            case .uploaded(let path, let id, let alreadyStored):
                tally.withLock { $0.uploaded += 1; if alreadyStored { $0.alreadyThere += 1 } }
                line = EventLine(event: "uploaded", path: path, serverID: id, alreadyStored: alreadyStored ? true : nil)
                bar.advance()
            case .uploadFailed(let path, let message, let terminal):
                if terminal { tally.withLock { $0.failed += 1 }; bar.advance() }
                line = EventLine(event: "upload-failed", path: path, message: message, terminal: terminal)
                if !json { console.err("\(path): upload failed\(terminal ? " for good" : ", will retry"): \(message)") }
            case .offline(let message):
                line = EventLine(event: "offline", message: message)
                if !json {
                    let giveUp = watching ? "watching, the run waits for it however long" : "with only uploads left, the run stops after \(offlineSeconds) s (--offline-timeout)"
                    console.err("\(endpoint) is unreachable (\(message)); analysing meanwhile. Uploads resume when it answers; \(giveUp)")
                }
            case .online:
                line = EventLine(event: "online")
                if !json { console.err("destination reachable again") }
            case .watching(let folders, let limited):
                line = EventLine(event: "watching", message: limited, folders: folders)
                if !json {
                    if folders == 0 {
                        console.err("cannot watch \(store.root) (\(limited ?? "?")); scanning it every \(Int(safetyNet)) s for new photos")
                    } else {
                        let partly = limited.map { " (not all of them: \($0); the library is scanned every \(Int(safetyNet)) s for the rest)" } ?? ""
                        console.err("watching \(folders) folder\(folders == 1 ? "" : "s") for new photos\(partly)")
                    }
                }
            case .changed(let folders, let report):
                if let counts = try? store.counts() { bar.setTotal(counts.total - counts.uploaded - counts.failed + tally.withLock { $0.uploaded + $0.failed }) }
                let settling = report.settling.isEmpty ? "" : "; \(report.settling.count) still being written, taken once they settle"
                let summary = "\(report.changes.added.count) new, \(report.changes.modified.count) changed, \(report.changes.removed.count) removed\(settling)"
                lastRescan.withLock { $0 = summary }
                line = EventLine(event: "changed", message: summary, folders: folders)
                if !json {
                    let seen = report.fullWalk ? "read the whole library (events were lost, or it came back)"
                        : "\(folders) folder\(folders == 1 ? "" : "s") changed"
                    console.err("\(seen): \(summary)")
                }
            case .libraryAway:
                line = EventLine(event: "library-away", message: store.root)
                if !json { console.err("\(store.root) is gone (unmounted or removed); waiting for it to come back") }
            case .libraryBack:
                line = EventLine(event: "library-back", message: store.root)
                if !json { console.err("\(store.root) is back; reading it in full") }
            case .conditions(let held):
                line = EventLine(event: held == nil ? "conditions-clear" : "conditions-wait", message: held)
                if let held { try? store.recordDeferral(held) }
                if !json {
                    console.err(held.map { "waiting: \($0); no upload starts (large ones in flight go back, to resume later)" }
                        ?? "the run conditions allow uploads again")
                }
            case .stopping:
                // The summary says how the run ended.
                break
            }
            if json, let line { console.json(line) }
        }
        // An analysis a stop left running (past `StopGrace.inFlight`) still banks its verdict:
        // wait for it (up to `StopGrace.beforeExit`), so the summary counts it and no progress
        // line is drawn after the summary.
        await OwnThreads.waitForAll()
        await onOwnThreadUntilDone("photodrain-drain-events") { runner.waitForEvents() }
        bar.finish()
        // The whole library analysed: its new faces get their people now, as analyze gives them
        // (uploads from here on carry them; those sent before did not have them yet).
        if outcome == .finished, try store.unanalyzedCount() == 0 {
            if let embedder = pipeline.embedder {
                try await PeopleCommand.embedWaitingFaces(store, embedder: embedder, maxPixels: pipeline.settings.maxPixels,
                                                          slots: options.slots, quiet: json, command: spec.name)
            }
            try store.clusterFaces()
        }
        let counts = try store.counts()
        let left = counts.discovered + counts.analyzed + (options.uploadUnanalysable ? counts.unanalysable : 0)
        let t = tally.withLock { $0 }
        let seconds = (clock.now - start).seconds
        var said = describe(outcome)
        // Watching, a signal is the normal end.
        if watching, case .interrupted(let signal) = outcome { said = "watch ended by \(SignalWatcher.name(signal))" }
        let summary = Summary(analysed: t.analysed, uploaded: t.uploaded, alreadyOnTheServer: t.alreadyThere, failed: t.failed, counts: counts,
                              seconds: (seconds * 100).rounded() / 100, outcome: said)
        if json {
            console.json(summary)
        } else {
            let already = t.alreadyThere > 0 ? " (\(t.alreadyThere == t.uploaded ? "all" : String(t.alreadyThere)) already on the server: nothing sent)" : ""
            console.out("uploaded \(t.uploaded)\(already), analysed \(t.analysed), failed \(t.failed) in \(String(format: "%.1f", seconds)) s; library: \(counts.uploaded)/\(counts.total) uploaded, \(counts.failed) failed, \(left) left (\(said))")
        }
        switch outcome {
        case .failed(let message):
            console.err("photodrain drain: \(message)")
            return .failure
        case .refused(let message):
            console.err(TransferOptions.refusalMessage(message, command: spec.name))
            return .failure
        case .offline(let message):
            console.err("photodrain drain: \(message); nothing was charged. Check --to, then run again")
            return left == 0 ? .success : .workRemains
        case .finished:
            if left > 0, let limit = options.maxUploadSize {
                let waiting = try store.uploadableCount(includeUnanalysable: options.uploadUnanalysable)
                    - store.uploadableCount(includeUnanalysable: options.uploadUnanalysable, maxSize: limit)
                if waiting > 0 {
                    console.err("photodrain drain: \(waiting) photo\(waiting == 1 ? "" : "s") larger than \(formatBytes(Int(limit))) wait for an unmetered network (--metered-file-limit)")
                }
            }
            if left > 0, let held = try? store.heldByOtherRunners(), held.count > 0 {
                let pids = held.processes.map(String.init).joined(separator: ", ")
                console.err("photodrain drain: \(held.count) photo\(held.count == 1 ? " is" : "s are") held by another runner on this store (pid \(pids)), which goes on with \(held.count == 1 ? "it" : "them"); run again once it is done")
            }
            if let reason = AnalysisOptions.noProgressPossible(memory, analysed: t.analysed, remaining: counts.discovered,
                                                                deferrals: runner.memoryDeferrals) {
                console.err("photodrain drain: \(reason)")
                return .failure
            }
            return left == 0 ? .success : .workRemains
        case .interrupted, .expired, .memoryExhausted:
            return left == 0 ? .success : .workRemains
        case .retryLater(let until):
            let wait = StatusCommand.formatDuration(max(0, until.timeIntervalSinceNow).rounded(.up))
            console.err("photodrain drain: the destination asked to wait until \(isoTimestamp(until.timeIntervalSince1970) ?? "?") (\(wait)), longer than --retry-after-limit; run again then. No photo was charged an attempt for the wait.")
            return .workRemains
        case .waiting(let reason):
            console.err("photodrain drain: what is left waited \(offlineSeconds) s (--offline-timeout) for the run conditions (\(reason)); nothing was charged. Run again later (exit 75).")
            return .workRemains
        case .stillChanging(let paths):
            let shown = paths.prefix(3).joined(separator: ", ") + (paths.count > 3 ? " and \(paths.count - 3) more" : "")
            console.err("photodrain drain: \(paths.count == 1 ? "a file was" : "\(paths.count) files were") still being written after \(Int(options.settleLimit.milliseconds / 1000)) s (\(shown)); run again once \(paths.count == 1 ? "it is" : "they are") complete.")
            return .workRemains
        }
    }

    static func describe(_ outcome: DrainOutcome) -> String {
        switch outcome {
        case .finished: "finished"
        case .interrupted(let signal): "interrupted by \(SignalWatcher.name(signal))"
        case .offline(let message): "offline: \(message)"
        case .failed(let message): "failed: \(message)"
        case .refused(let message): "refused by the destination: \(message)"
        case .retryLater(let until): "retry after \(isoTimestamp(until.timeIntervalSince1970) ?? "?")"
        case .stillChanging(let paths): "\(paths.count) file\(paths.count == 1 ? "" : "s") still being written"
        case .waiting(let reason): "waiting: \(reason)"
        case .expired: "no analysis finished within the time allowed"
        case .memoryExhausted: "memory headroom exhausted"
        }
    }
}
