import AssetStore
import Drain
import Foundation
import Receiver
import Synchronization
import SystemSupport
import Transfer

/// `photodrain demo`: the whole pipeline on the sample photos against an embedded receiver.
enum DemoCommand: Command {
    static let spec = CommandSpec(
        name: "demo",
        abstract: "Run the whole pipeline on SampleImages against an embedded loopback receiver.",
        arguments: "[DIR]",
        discussion: """
        Starts a receiver on a free 127.0.0.1 port with a temporary directory, then drains DIR
        (default: SampleImages of this checkout) through it with the real foreground runner: every
        photo is analysed (faces, label, verdict banked in a temporary store) and uploaded with its
        verdict. One upload's connection is cut on purpose, to show it resume from the server's
        offset. Finally every stored object is checked against its file, byte for byte.
        """,
        options: AnalysisOptions.all + [.option("cut-at", "BYTES", "Cut the connection of the first upload to reach this offset.", default: "40000"),
                                        .flag("keep", "Keep the temporary store and receiver directory.")],
        positionals: (0, 1),
        examples: [("photodrain demo", "the README's first command runs this")],
        exitCodes: [(0, "every photo analysed, uploaded once and stored intact"), (1, "something did not arrive intact"), (64, "usage error")]
    )

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let console = Console.shared
        let folder = try arguments.positionals.first ?? sampleImagesFolder()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("photodrain-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !arguments.flag("keep") { try? FileManager.default.removeItem(at: work) } }
        let cutAt = Int64(try arguments.int("cut-at", default: 40_000, range: 1...Int.max))

        // 1. The receiver, with one connection cut on purpose.
        let requests = Mutex<[String]>([])
        let faults = FaultInjection(cutAtOffsets: [cutAt])
        let server = try ReceiverServer.startLoopback(directory: work.appendingPathComponent("received").path, faultInjection: faults) { line in
            requests.withLock { $0.append(line) }
        }
        defer { server.stop() }
        guard let url = server.uploadURL else { return .failure }
        console.out(console.bold("PhotoDrain demo") + ": draining \(folder) to the embedded receiver at \(url)")

        // 2. The foreground runner: analysis of every photo, upload-first as verdicts appear.
        let store = try AssetStore(root: folder, path: work.appendingPathComponent("library.sqlite").path)
        let pipeline = try AnalysisOptions.pipeline(arguments)
        var options = DrainOptions(configuration: UploadConfiguration(endpoint: url))
        options.slots = DrainOptions.defaultSlots
        let runner = DrainRunner(store: store, analyzer: pipeline, options: options, memory: try AnalysisOptions.memoryGuard(arguments))
        let watcher = SignalWatcher { signal in runner.stop(signal: signal) }
        defer { watcher.cancel() }
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = await runner.run { event in
            switch event {
            case .scanned(let report):
                console.out("scanned \(report.photoCount) files")
            case .analysed(let path, let analysed, _, _):
                let verdict = analysed.verdict, faces = verdict.confirmedFaces
                let what = verdict.label == .unanalysable ? "not a photo: unanalysable, not uploaded"
                    : verdict.error.map { "undecodable (\($0.code))" } ?? "\(faces) face\(faces == 1 ? "" : "s"), \(verdict.label.rawValue)"
                console.out("  analysed  \(path): \(what)")
            case .uploaded(let path, let id, _):
                console.out("  uploaded  \(path) -> \(id ?? "?")")
            case .uploadFailed(let path, let message, let terminal):
                console.out("  upload of \(path) failed\(terminal ? "" : " (will retry)"): \(message)")
            case .deferred(let path, let reason):
                console.out("  deferred  \(path): \(reason)")
            case .offline(let message):
                console.out("  receiver unreachable: \(message)")
            case .online:
                console.out("  receiver reachable again")
            case .rescanned(let report):
                if !report.changes.added.isEmpty { console.out("scanned again: \(report.changes.added.count) new files") }
            case .retryAfter(let path, let until):
                console.out("  receiver asked to wait: \(path) again at \(isoTimestamp(until.timeIntervalSince1970) ?? "?")")
            case .watching, .changed, .libraryAway, .libraryBack, .conditions, .stopping:
                break  // the demo does not watch, nor ask for run conditions; its summary says how it ended
            }
        }
        let seconds = (clock.now - start).seconds

        // 3. What happened, checked against the files.
        let rows = try store.assets()
        let objects = try server.storedObjects()
        let byID = Dictionary(objects.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        console.out("")
        // Columns as wide as their longest entry: a label is never cut ("unanalysable").
        let nameWidth = max(rows.map(\.path.count).max() ?? 0, "photo".count) + 1
        let labelWidth = max(rows.map { ($0.label ?? "-").count }.max() ?? 0, "label".count) + 1
        func cell(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }
        console.out(console.bold("\(cell("photo", nameWidth)) \(cell("faces", 6)) \(cell("label", labelWidth)) server id"))
        var intact = 0
        for row in rows {
            console.out("\(cell(row.path, nameWidth)) \(cell(String(row.faceCount ?? 0), 6)) \(cell(row.label ?? "-", labelWidth)) \(row.serverID ?? "-")")
            if let id = row.serverID, let object = byID[id], let path = server.contentPath(ofObject: id),
               let sha = try? SHA256.hex(path: path), sha == object.sha256, sha == row.sha256,
               object.verdict == row.verdictJSON {
                intact += 1
            }
        }
        let log = requests.withLock { $0 }
        let resumes = log.filter { $0.hasPrefix("HEAD /uploads/") || $0.hasPrefix("PATCH /uploads/") }
        console.out("")
        if faults.firedCount > 0 {
            console.out("resumed upload: the receiver cut one connection at byte \(cutAt); the client asked for the offset and sent the rest:")
            for line in resumes.prefix(4) { console.out("  \(line)") }
        }
        let counts = try store.counts()
        console.out("\(counts.total) photos, \(counts.faces) faces in \(counts.withFaces) photos; \(counts.uploaded) uploaded, \(objects.count) objects on the receiver, \(intact) verified byte for byte with their verdicts, in \(String(format: "%.1f", seconds)) s (\(DrainCommand.describe(outcome)))")
        if arguments.flag("keep") { console.out("kept \(work.path)") }
        // Files that are not photos (the folder's LICENSES.md) stay behind: drain was not asked to send them.
        let sent = rows.filter { !$0.isUnanalysable }.count
        return intact == sent && objects.count == sent ? .success : .failure
    }

    /// SampleImages installed with the binary (`<prefix>/share/photodrain/SampleImages`), of the
    /// checkout it was built in, or of the current folder.
    static func sampleImagesFolder() throws -> String {
        let exe = URL(fileURLWithPath: ModelSearch.executablePath()).resolvingSymlinksInPath().deletingLastPathComponent()
        var candidates = [exe.appendingPathComponent("../share/photodrain/SampleImages").standardized.path]
        var dir = exe
        for _ in 0..<6 {
            candidates.append(dir.appendingPathComponent("SampleImages").path)
            dir = dir.deletingLastPathComponent()
        }
        candidates.append(FileManager.default.currentDirectoryPath + "/SampleImages")
        guard let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw UsageError("no SampleImages folder found (looked in \(candidates[0]), beside the binary and in the current folder); pass a folder of photos",
                             command: spec.name)
        }
        return found
    }
}
