import AssetStore
import Foundation

/// `photodrain status [DIR]`: counts by state and the photos that failed, with their reasons.
enum StatusCommand: Command {
    static let spec = CommandSpec(
        name: "status",
        abstract: "Show how far a library has got: photos by state, and every failure with its reason.",
        arguments: "[DIR]",
        discussion: "Reads the store only; it does not scan the folder (analyze, drain and wake do).",
        options: [LibraryOptions.store, .flag("json", "One JSON object: counts, failed, undecodable and skipped photos.")],
        positionals: (0, 1),
        examples: [("photodrain status ~/Pictures", "counts and failures"), ("photodrain status --json . | jq .counts", "for scripts")],
        exitCodes: [(0, "shown"), (1, "the store could not be read"), (64, "usage error")]
    )

    struct Problem: Encodable {
        let path: String
        let reason: String
        let attempts: Int
    }

    struct Report: Encodable {
        let library: String
        let store: String
        let counts: StatusCounts
        let failed: [Problem]
        let undecodable: [Problem]
        /// Found by the last scan but not in the library (a name that is not UTF-8, an unreadable folder).
        let skipped: [Problem]
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let store = try LibraryOptions.open(arguments, readOnly: true)
        let counts = try store.counts()
        let failed = try store.assets(in: .failed).map { Problem(path: $0.path, reason: $0.lastError ?? "unknown", attempts: $0.attempts) }
        let undecodable = try store.undecodableAssets().map { Problem(path: $0.path, reason: $0.analysisError ?? "", attempts: 0) }
        let skipped = try store.scanProblems().map { Problem(path: $0.path, reason: $0.message, attempts: 0) }
        if arguments.flag("json") {
            Console.shared.json(Report(library: store.root, store: store.path, counts: counts, failed: failed,
                                       undecodable: undecodable, skipped: skipped))
            return .success
        }
        let console = Console.shared
        console.out(console.bold("\(store.root)") + "  (store \(store.path))")
        let rows: [(String, Int)] = [
            ("photos", counts.total), ("waiting for analysis", counts.discovered), ("analysed, not uploaded", counts.analyzed),
            ("uploaded", counts.uploaded), ("failed", counts.failed), ("skipped by the last scan", counts.skipped),
        ]
        for (name, value) in rows {
            console.out("  \(name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(value)")
        }
        console.out("  \("faces found".padding(toLength: 24, withPad: " ", startingAt: 0)) \(counts.faces) in \(counts.withFaces) photos")
        if !undecodable.isEmpty {
            console.out("")
            console.out("Undecodable (\(undecodable.count)); they are uploaded with their error as the verdict:")
            for problem in undecodable { console.out("  \(problem.path): \(problem.reason)") }
        }
        if !skipped.isEmpty {
            console.out("")
            console.out(console.red("Skipped by the last scan (\(skipped.count)); not in the library until fixed:"))
            for problem in skipped { console.out("  \(problem.path): \(problem.reason)") }
        }
        if !failed.isEmpty {
            console.out("")
            console.out(console.red("Failed (\(failed.count)):"))
            for problem in failed { console.out("  \(problem.path): \(problem.reason) (after \(problem.attempts) attempts)") }
        }
        return .success
    }
}
