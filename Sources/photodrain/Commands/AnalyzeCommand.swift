import AssetStore
import Drain
import FaceAnalysis
import Foundation
import Synchronization
import SystemSupport

/// `photodrain analyze DIR`: the background runner; banks a verdict on every photo, never uploads.
enum AnalyzeCommand: Command {
    static let spec = CommandSpec(
        name: "analyze",
        abstract: "Analyse a photo library: find faces and bank a verdict on every photo. Never uploads.",
        arguments: "DIR",
        discussion: """
        Scans DIR (new photos are added, changed ones re-analysed, removed ones dropped), then
        analyses photos --slots at a time and banks each verdict in the store the moment it
        exists: a kill costs only the analyses in flight, and a rerun continues. An undecodable
        photo gets a terminal verdict with its error. Several runners may share one store.
        While it works, analyze scans DIR again every --rescan-interval seconds, and once more
        before finishing (as drain does), so photos added meanwhile are analysed in this run.
        SIGINT/SIGTERM stop it within a second with exit 75; so does --expire-after seconds
        without a banked verdict.

        """ + LibraryOptions.scanDiscussion + "\n" + LibraryOptions.filterDiscussion,
        options: [LibraryOptions.store] + LibraryOptions.filters + [LibraryOptions.dryRun, LibraryOptions.rescan, LibraryOptions.includeHidden,
                  .option("slots", "N", "Concurrent analyses.", default: "2"),
                  .option("page-size", "N", "Kept for the scripts that pass it: photos are claimed one at a time as a slot frees, as drain claims them.", default: "40"), LibraryOptions.rescanInterval,
                  .option("expire-after", "SECONDS", "Stop (exit 75) when no verdict is banked for this long.", default: "30")]
            + RunConditionOptions.analysing + AnalysisOptions.all + [.flag("json", "JSON lines: one per verdict, then a summary.")],
        positionals: (1, 1),
        examples: [
            ("photodrain analyze ~/Pictures", "analyse everything, two at a time"),
            ("photodrain analyze ~/Pictures --json | jq 'select(.faces > 0) .path'", "photos with faces"),
            ("photodrain analyze ~/Pictures --dry-run --include '2019/*'", "what would be analysed in 2019/, changing nothing"),
        ] + LibraryOptions.filterExamples("analyze"),
        exitCodes: [(0, "every photo has a verdict (an undecodable photo's verdict says why; status lists them)"), (1, "failure (store, cascade or model unreadable), or no progress possible (memory too small)"),
                    (64, "usage error"), (75, "work remains (interrupted, expired, or memory exhausted): run again")]
    )

    struct VerdictLine: Encodable {
        let event = "verdict"
        let path: String
        let label: String?
        let faces: Int
        let score: Double?
        let error: String?
        let milliseconds: Double
    }

    struct Summary: Encodable {
        let event = "summary"
        var photos: Int
        var analysed: Int
        var faces: Int
        var withFaces: Int
        var errors: Int
        /// Files that are not photos PhotoDrain analyses (not counted in `errors`).
        var unanalysable: Int
        var remaining: Int
        var seconds: Double
        var imagesPerSecond: Double
        var outcome: String
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let signals = EarlySignals()
        defer { signals.cancel() }
        var options = AnalyzeOptions()
        options.slots = try arguments.int("slots", default: 2, range: 1...64)
        options.pageSize = try arguments.int("page-size", default: 40, range: 1...10_000)
        options.expireAfter = .seconds(try arguments.double("expire-after", default: 30, range: 0.1...86_400))
        options.rescanInterval = try LibraryOptions.rescanInterval(arguments)
        if arguments.flag("dry-run") {
            let store = try LibraryOptions.open(arguments, dryRun: true)
            try DryRunOutput.run(store, command: spec.name, upload: false, json: arguments.flag("json"))
            return .success
        }
        let memory = try AnalysisOptions.memoryGuard(arguments)
        let pipeline = try AnalysisOptions.pipeline(arguments)
        let store = try LibraryOptions.open(arguments)
        // The .sqlite file alone holds everything once the command ends, whatever way it ends.
        defer { store.checkpoint() }
        try RunConditionOptions.applyPriority(arguments)
        if case .wait = try RunConditionOptions.decide(arguments, store: store, uploads: false) { return .workRemains }
        let json = arguments.flag("json")
        let console = Console.shared

        let scan = try store.scan(full: arguments.flag("rescan"), rehash: FileReader.sha256Hex)
        for problem in scan.problems { console.err("photodrain analyze: skipped \(problem.path): \(problem.message)") }
        let todo = try store.unanalyzedCount()
        if !json {
            console.err("\(scan.photoCount) files in \(store.root): \(scan.changes.added.count) new, \(scan.changes.modified.count) changed, \(scan.changes.removed.count) removed; \(todo) to analyse")
        }
        let runner = AnalyzeRunner(store: store, analyzer: pipeline, options: options, memory: memory)
        signals.attach { signal in runner.stop(.interrupted(signal: signal)) }
        let bar = ProgressBar(title: "analysing", total: todo, quiet: json)
        let tally = Mutex((analysed: 0, faces: 0, withFaces: 0, errors: 0, unanalysable: 0))
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = await runner.run { event in
            switch event {
            case .verdict(let path, let analysed, let banked, let ms):
                guard banked else { return }
                let verdict = analysed.verdict
                tally.withLock {
                    $0.analysed += 1
                    $0.faces += verdict.confirmedFaces
                    if verdict.confirmedFaces > 0 { $0.withFaces += 1 }
                    if verdict.label == .unanalysable {
                        $0.unanalysable += 1
                    } else if verdict.error != nil {
                        $0.errors += 1
                    }
                }
                if json {
                    console.json(VerdictLine(path: path, label: verdict.label.rawValue, faces: verdict.confirmedFaces,
                                             score: verdict.indexedScore, error: verdict.error?.code,
                                             milliseconds: (ms * 10).rounded() / 10))
                }
                bar.advance(status: verdict.error.map { "(\(path): \($0.code))" })
            case .deferred(let path, let reason):
                if !json { console.err("\(path): deferred: \(reason)") }
            case .stopping(let reason):
                if !json { console.err("stopping (\(describe(reason))); finishing analyses in flight") }
            }
        }
        bar.finish()
        let seconds = (clock.now - start).seconds
        let remaining = try store.unanalyzedCount()
        // The whole library analysed: its new faces get their people now, in the order `people`
        // would give them (path order, so the same library makes the same people), and the
        // uploads that follow carry them. A run that left photos leaves that to a later one.
        if remaining == 0 && outcome == .finished {
            // Faces analysed before they had descriptors get theirs from the same photos first.
            if let embedder = pipeline.embedder {
                try await PeopleCommand.embedWaitingFaces(store, embedder: embedder, maxPixels: pipeline.settings.maxPixels,
                                                          slots: options.slots, quiet: json, command: spec.name)
            }
            try store.clusterFaces()
        }
        let t = tally.withLock { $0 }
        let summary = Summary(photos: scan.photoCount, analysed: t.analysed, faces: t.faces, withFaces: t.withFaces, errors: t.errors,
                              unanalysable: t.unanalysable, remaining: remaining, seconds: (seconds * 100).rounded() / 100,
                              imagesPerSecond: seconds > 0 ? (Double(t.analysed) / seconds * 10).rounded() / 10 : 0,
                              outcome: describe(outcome))
        if json {
            console.json(summary)
        } else {
            console.out("analysed \(t.analysed) photos in \(String(format: "%.1f", seconds)) s (\(String(format: "%.1f", summary.imagesPerSecond)) images/s): \(t.faces) faces in \(t.withFaces) photos, \(t.errors) undecodable, \(t.unanalysable) not photos (unanalysable); \(remaining) left")
        }
        if case .failed(let message) = outcome {
            console.err("photodrain analyze: \(message)")
            return .failure
        }
        if let reason = AnalysisOptions.noProgressPossible(memory, analysed: t.analysed, remaining: remaining,
                                                            leastHeadroom: AnalyzeRunner.leastHeadroom, deferrals: runner.memoryDeferrals) {
            console.err("photodrain analyze: \(reason)")
            return .failure
        }
        return remaining == 0 ? .success : .workRemains
    }

    static func describe(_ outcome: AnalyzeOutcome) -> String {
        switch outcome {
        case .finished: "finished"
        case .interrupted(let signal): "interrupted by \(SignalWatcher.name(signal))"
        case .expired: "no verdict banked within --expire-after"
        case .memoryExhausted: "memory headroom exhausted"
        case .failed(let message): "failed: \(message)"
        }
    }
}
