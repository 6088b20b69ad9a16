import AssetStore
import Drain
import Foundation
import Synchronization
import Transfer
import SystemSupport

/// `photodrain wake DIR --to URL`: one bounded invocation of the closed-app extension's work.
enum WakeCommand: Command {
    static let spec = CommandSpec(
        name: "wake",
        abstract: "One bounded, memory-capped pass: hand upload jobs to the agent, analyse at most one page.",
        arguments: "DIR",
        discussion: """
        In order: acknowledge finished upload jobs; retry retryable failed ones (acknowledging
        permanent errors instead); cancel jobs made redundant (photo removed, changed, or already
        uploaded); create jobs for analysed photos until --inflight-limit; analyse at most one page
        of photos, bailing the moment memory headroom runs low (a photo whose analysis does not
        fit is left for a later invocation, never analysed smaller). It never sends file bytes: the
        `agent` does. Run it from a timer; SIGTERM stops it promptly with exit 75.

        With --feed-agent (and --runtime-limit), while an agent runs: every photo is analysed, a page
        at a time, not just one page; the jobs are topped up every 50 ms meanwhile (acknowledging
        what the agent finished, creating jobs in their place), and after the analysis until
        nothing remains: the agent's queue stays full for the whole runtime limit. The installed
        unit starts wake again 2 s after an exit 75, as the seeds' system calls its extension again
        when it answers "processing".

        """ + LibraryOptions.scanDiscussion + "\n" + LibraryOptions.filterDiscussion,
        options: [LibraryOptions.store] + LibraryOptions.filters + [LibraryOptions.dryRun, LibraryOptions.rescan, LibraryOptions.includeHidden, TransferOptions.to, TransferOptions.newDestination]
            + TransferOptions.s3 + [
                  .option("inflight-limit", "N", "Unacknowledged upload jobs allowed at once.", default: "40"),
                  .option("page-size", "N", "Photos analysed at most in one pass (claimed at a time with --feed-agent).", default: "40"),
                  .option("slots", "N", "Analyses at once, each within its share of the memory headroom.", default: "1"),
                  .option("max-attempts", "N", "Counted failures before a photo is failed.", default: "\(RetryPolicy.defaultMaxAttempts)"),
                  .option("runtime-limit", "SECONDS", "Stop (exit 75) after this long. A run the conditions hold back (--network, --on-battery) waits this long for them to clear before it exits 75."),
                  .flag("feed-agent", "With --runtime-limit: while an agent runs, keep its queue full until the limit (acknowledge what it finished, create jobs in their place, analyse further pages) instead of one pass. What the installed service runs."),
                  .flag("upload-unanalysable", "Create upload jobs for files that are not photos PhotoDrain analyses (videos, raws, documents) too, sent as they are with their 'unanalysable' verdict.")]
            + RunConditionOptions.uploading + AnalysisOptions.all + [.flag("json", "Print the report as one JSON object.")],
        positionals: (1, 1),
        examples: [
            ("photodrain wake ~/Pictures --to https://photos.example/uploads --memory-limit 200M", "what a timer runs"),
            ("until photodrain wake ~/Pictures --to URL; [ $? -ne 75 ] || continue; done", "repeat until done"),
        ] + LibraryOptions.filterExamples("wake"),
        exitCodes: [(0, "completed: every photo is uploaded or failed"),
                    (1, "failure, the destination refused the agent's uploads (token, URL, certificate), or no progress possible (memory too small, or jobs wait and no agent runs)"),
                    (64, "usage error"), (75, "processing: this run made progress, or a running agent holds the jobs")]
    )

    struct Report: Encodable {
        var acknowledged, retried, cancelled, created, analysed, jobsInFlight: Int
        var agentRunning: Bool
        var retriesDeferred: Int
        var nextRetryAt: String?
        var bailed: String?
        var workRemains: Bool
        var outcome: String
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        guard let destination = arguments.string("to") else {
            throw UsageError("--to URL is required (or \"to\" in the configuration file)", command: spec.name)
        }
        // The jobs name where their bytes go (an S3 bucket with its endpoint); the agent checks
        // its own options lead there before sending.
        let identity = try TransferOptions.identity(for: destination, settings: UploadDestinations.Settings(
            s3Endpoint: arguments.string("s3-endpoint"), s3Region: arguments.string("s3-region")), command: spec.name)
        let signals = EarlySignals()
        defer { signals.cancel() }
        var options = WakeOptions(destination: identity.key)
        options.inflightLimit = try arguments.int("inflight-limit", default: 40, range: 1...100_000)
        options.pageSize = try arguments.int("page-size", default: 40, range: 0...10_000)
        options.slots = try arguments.int("slots", default: 1, range: 1...64)
        options.retryPolicy = RetryPolicy(maxAttempts: try arguments.int("max-attempts", default: RetryPolicy.defaultMaxAttempts, range: 1...1000))
        options.uploadUnanalysable = arguments.flag("upload-unanalysable")
        options.fullScan = arguments.flag("rescan")
        if arguments.flag("dry-run") {
            let store = try LibraryOptions.open(arguments, dryRun: true)
            // One invocation analyses at most a page; the uploads listed become jobs for the agent.
            try DryRunOutput.run(store, command: spec.name, upload: true, uploadUnanalysable: options.uploadUnanalysable,
                                 analyseLimit: options.pageSize, json: arguments.flag("json"))
            return .success
        }
        if arguments.string("runtime-limit") != nil {
            options.runtimeLimit = .seconds(try arguments.double("runtime-limit", default: 0, range: 0.01...86_400))
        }
        options.feedAgent = arguments.flag("feed-agent")
        if options.feedAgent && options.runtimeLimit == nil {
            throw UsageError("--feed-agent keeps going until the runtime limit: give --runtime-limit SECONDS too", command: spec.name)
        }
        let memory = try AnalysisOptions.memoryGuard(arguments)
        let pipeline = try AnalysisOptions.pipeline(arguments)
        let store = try LibraryOptions.open(arguments)
        // The .sqlite file alone holds everything once the command ends, whatever way it ends.
        defer { store.checkpoint() }
        _ = try TransferOptions.useDestination(identity, url: destination, store: store, arguments: arguments)
        try RunConditionOptions.applyPriority(arguments)
        var decision = try RunConditionOptions.decide(arguments, store: store, uploads: true)
        if case .wait = decision, let limit = options.runtimeLimit {
            // A bounded run waits out its runtime limit for the conditions to clear: its unit
            // starts it again 2 s after a 75, which must not become a start every 2 s on battery.
            decision = await RunConditionOptions.waitToClear(arguments, upTo: limit, signals: signals)
        }
        switch decision {
        case .wait: return .workRemains
        case .go(let maxUploadSize, _): options.maxUploadSize = maxUploadSize
        }
        let runner = WakeRunner(store: store, analyzer: pipeline, memory: memory, options: options)
        let terminatedAt = Mutex<(at: ContinuousClock.Instant, signal: Int32)?>(nil)
        signals.attach { signal in
            terminatedAt.withLock { $0 = $0 ?? (.now, signal) }
            runner.terminate(reason: "\(SignalWatcher.name(signal)): terminating")
        }
        let result = Mutex<Result<WakeReport, any Error>?>(nil)
        Thread.detachNewThread {
            let outcome = Result { try runner.run() }
            result.withLock { $0 = outcome }
        }
        // willTerminate means promptly: the run stops by the stop rule (`StopGrace`: an analysis
        // in flight gets its grace, then is abandoned; its photo was not banked, so the next
        // invocation redoes it). A run that has not ended by then (a store call that blocks) is
        // left: the command reports and exits.
        while result.withLock({ $0 }) == nil {
            if let stop = terminatedAt.withLock({ $0 }), ContinuousClock.now - stop.at > StopGrace.runEnds {
                Console.shared.out("wake: stopped by \(SignalWatcher.name(stop.signal)); the analysis in flight was abandoned; processing")
                return .workRemains
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        guard let finished = result.withLock({ $0 }) else { return .failure }
        let report = try finished.get()
        // Every photo analysed: the new faces join their people before the agent sends their
        // photos (an upload carries the people the store has when it is sent). A pass takes the
        // faces in path order, as analyze's does; faces without descriptors wait for `people`.
        if try store.unanalyzedCount() == 0 { try store.clusterFaces() }
        let status: ExitCode
        let outcome: String
        if let refused = report.refused {
            Console.shared.err(TransferOptions.refusalMessage(refused, command: spec.name, caFileOf: AgentCommand.spec.name))
            (status, outcome) = (.failure, "refused by the destination")
        } else if !report.workRemains {
            (status, outcome) = (.success, "completed")
        } else if report.progressing {
            (status, outcome) = (.workRemains, "processing")
        } else if report.retriesDeferred > 0 && report.jobsInFlight <= report.retriesDeferred {
            // Every open job waits for the server's Retry-After: work remains, nothing is wrong.
            (status, outcome) = (.workRemains, "waiting for the server's Retry-After")
        } else if report.jobsInFlight > 0 && !report.agentRunning {
            (status, outcome) = (.failure, "no progress possible: \(report.jobsInFlight) upload job\(report.jobsInFlight == 1 ? "" : "s") wait and no agent is running (start `photodrain agent \(store.root)`)")
        } else {
            (status, outcome) = (.failure, "no progress possible")
        }
        let summary = Report(acknowledged: report.acknowledged, retried: report.retried, cancelled: report.cancelled,
                             created: report.created, analysed: report.analysed, jobsInFlight: report.jobsInFlight,
                             agentRunning: report.agentRunning, retriesDeferred: report.retriesDeferred,
                             nextRetryAt: report.nextRetryAt.map { $0.ISO8601Format() },
                             bailed: report.bailed, workRemains: report.workRemains, outcome: outcome)
        if arguments.flag("json") {
            Console.shared.json(summary)
        } else {
            var line = "wake: acknowledged \(report.acknowledged), retried \(report.retried), cancelled \(report.cancelled), created \(report.created) jobs, analysed \(report.analysed); \(report.jobsInFlight) upload jobs open; \(outcome)"
            if let next = report.nextRetryAt {
                line += "; \(report.retriesDeferred) retr\(report.retriesDeferred == 1 ? "y waits" : "ies wait") for the server's Retry-After (until \(next.ISO8601Format()))"
            }
            if let bailed = report.bailed { line += " (stopped early: \(bailed)\(status == .workRemains ? "; more work remains" : ""))" }
            Console.shared.out(line)
        }
        return status
    }
}
