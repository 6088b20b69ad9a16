import AssetStore
import PhotoDecoding

/// Prints what `analyze`, `drain` and `wake --dry-run` would do: one line per file (JSON
/// lines with --json: `would-analyse`, `would-upload`, `held-back`, `skipped`), then a summary.
enum DryRunOutput {
    struct Line: Encodable {
        let event: String
        let path: String
        let reason: String
    }

    struct Summary: Encodable {
        let event = "summary"
        let dryRun = true
        let analyse: Int
        let upload: Int
        let heldBack: Int
        let skipped: Int
    }

    /// Tells what `command` would do to `store`'s library, line by line as the store finds it
    /// (nothing is held for the whole library), then the summary. `upload`: the command uploads
    /// (`drain`, `wake`); files not analysed yet whose name is no photo's are then held back when
    /// unanalysable files are not sent (their verdict will be `unanalysable`, the rule
    /// FacePipeline applies). `analyseLimit` caps the analyses listed (wake's page).
    static func run(_ store: AssetStore, command: String, upload: Bool, uploadUnanalysable: Bool = false,
                    analyseLimit: Int = .max, json: Bool) throws(StoreError) {
        let console = Console.shared
        let byName: ((String) -> Bool)? = upload && !uploadUnanalysable ? { ImageFormat.fromExtension(of: $0) == nil } : nil
        let counts = try store.dryRun(includeUnanalysable: uploadUnanalysable, heldBackByName: byName, analyseLimit: analyseLimit,
                                      uploads: upload) { group, entry in
            let (event, verb) = switch group {
            case .analyse: ("would-analyse", "analyse")
            case .upload: ("would-upload", "upload")
            case .heldBack: ("held-back", "hold back")
            case .skipped: ("skipped", "skip")
            }
            if json {
                console.json(Line(event: event, path: entry.path, reason: entry.reason))
            } else {
                console.out("would \(verb) \(entry.path) (\(entry.reason))")
            }
        }
        let summary = Summary(analyse: counts.analyse, upload: counts.upload, heldBack: counts.heldBack, skipped: counts.skipped)
        if json {
            console.json(summary)
        } else {
            var line = "\(command) --dry-run: would analyse \(summary.analyse)"
            if upload { line += ", upload \(summary.upload), hold back \(summary.heldBack)" }
            line += ", skip \(summary.skipped); nothing was changed"
            console.out(line)
        }
    }
}
