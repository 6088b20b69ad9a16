import AssetStore
import PhotoDecoding

/// Prints a `DryRunPlan` for `analyze`, `drain` and `wake --dry-run`: one line per file (JSON
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

    /// Moves files not analysed yet whose name is no photo's out of the uploads when unanalysable
    /// files are not sent: their verdict will be `unanalysable` (the rule FacePipeline applies).
    static func refine(_ plan: DryRunPlan, uploadUnanalysable: Bool) -> DryRunPlan {
        guard !uploadUnanalysable else { return plan }
        var refined = plan
        refined.upload = []
        for entry in plan.upload {
            if entry.afterAnalysis && ImageFormat.fromExtension(of: entry.path) == nil {
                refined.heldBack.append(DryRunPlan.Entry(path: entry.path, reason: "not a photo by its name: it will be unanalysable",
                                                         afterAnalysis: true))
            } else {
                refined.upload.append(entry)
            }
        }
        refined.heldBack.sort { $0.path < $1.path }
        return refined
    }

    /// Prints the plan; `analyseLimit` caps the analyses listed (wake's page), `upload` says
    /// whether the command uploads at all.
    static func print(_ plan: DryRunPlan, command: String, upload: Bool, analyseLimit: Int = .max, json: Bool) {
        let console = Console.shared
        let analyse = Array(plan.analyse.prefix(analyseLimit))
        let uploads = upload ? plan.upload : []
        let heldBack = upload ? plan.heldBack : []
        let groups: [(String, String, [(path: String, reason: String)])] = [
            ("would-analyse", "analyse", analyse.map { ($0.path, $0.reason) }),
            ("would-upload", "upload", uploads.map { ($0.path, $0.reason) }),
            ("held-back", "hold back", heldBack.map { ($0.path, $0.reason) }),
            ("skipped", "skip", plan.skipped.map { ($0.path, $0.message) }),
        ]
        for (event, verb, entries) in groups {
            for entry in entries {
                if json {
                    console.json(Line(event: event, path: entry.path, reason: entry.reason))
                } else {
                    console.out("would \(verb) \(entry.path) (\(entry.reason))")
                }
            }
        }
        let summary = Summary(analyse: analyse.count, upload: uploads.count, heldBack: heldBack.count, skipped: plan.skipped.count)
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
