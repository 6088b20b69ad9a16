import AssetStore
import Drain
import Foundation
import SystemSupport
import Transfer

/// `photodrain restore DIR [PATH…]`: brings back what `free-space` removed (issue 33), from the
/// trash by rename, else from the destination it was proven at, checked by digest before it is
/// put in place (`Drain.PhotoRestore`).
enum RestoreCommand: Command {
    static let spec = CommandSpec(
        name: "restore",
        abstract: "Bring back photos free-space removed: from the trash, else downloaded from the destination and checked by digest.",
        arguments: "DIR [PATH...]",
        discussion: """
        Each PATH (relative to DIR, or absolute inside it) names a removed photo, a companion (its
        photo and companions come back together), or a folder (everything removed from under it);
        without a PATH, everything free-space removed comes back.

        A file still in the trash is renamed back, once its bytes are checked to be the ones
        removed. One the trash no longer holds (emptied, or removed with --delete) is downloaded
        from the destination it was proven at (photodrain serve by its object, S3 by its key; --to
        names another URL for the same bytes) into a hidden file beside its place, synced, its
        SHA-256 checked against the one recorded at removal, given its modification time back,
        and only then linked into place: a file that is now at the path is never replaced. The
        store records each restore. Killed at any point, a rerun finishes the job.
        """,
        options: [LibraryOptions.store] + TransferOptions.all.filter { !["accept-unverified", "bwlimit"].contains($0.name) } + [
            .flag("dry-run", "List what would come back and from where; change nothing."),
            .flag("json", "JSON lines: one per file (source trash, destination or in-place; or a failure), then a summary."),
        ],
        positionals: (1, nil),
        examples: [
            ("photodrain restore ~/Pictures 2023/IMG_0042.HEIC", "one photo back, with its Live Photo movie and edits"),
            ("photodrain restore ~/Pictures 2023 --dry-run", "what would come back from the 2023 folder, and from where"),
            ("photodrain restore ~/Pictures", "everything free-space removed"),
        ],
        exitCodes: [(0, "every file named came back (or, with --dry-run, can)"),
                    (1, "some could not (another file at its path, the destination lost it or holds other bytes): each named with why; or the library folder looks unmounted (empty while the store knows files in it): nothing restored"),
                    (64, "usage error, or a PATH that names nothing free-space removed"), (75, "the destination could not be reached: run again")]
    )

    /// One file's line in `--json`.
    struct Line: Encodable {
        let path: String
        let photo: String
        let bytes: Int64
        var source: String?
        var error: String?
    }

    struct Summary: Encodable {
        let event = "summary"
        var dryRun: Bool
        var restored = 0
        var bytes: Int64 = 0
        var failed = 0
        var error: String?
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        let json = arguments.flag("json")
        let folder = arguments.positionals[0]
        let store = try LibraryOptions.open(arguments, dryRun: dryRun, unfiltered: true)
        defer { store.checkpoint() }
        let console = Console.shared
        if !dryRun {
            let recovery = try FreeSpaceRemoval.recover(store: store)
            if recovery.finished + recovery.undone > 0 {
                console.err("photodrain restore: settled an interrupted free-space: \(recovery.finished) removal(s) finished, \(recovery.undone) undone")
            }
        }
        let root = FileManager.default.fileExists(atPath: folder) ? ((folder as NSString).standardizingPath) : folder
        let paths = try arguments.positionals.dropFirst().map { (given: String) throws(UsageError) -> String in
            try relative(given, root: root, storeRoot: store.root)
        }
        let removals = try store.removals()
        let unknown = paths.filter { PhotoRestore.select(removals, paths: [$0]).isEmpty }
        if !unknown.isEmpty {
            throw UsageError("nothing free-space removed (and not yet restored) is at \(unknown.joined(separator: ", "))", command: spec.name)
        }
        let chosen = PhotoRestore.select(removals, paths: paths)
        if try !dryRun && FreeSpaceCommand.libraryLooksEmpty(folder, store: store) {
            // An unmounted disk leaves its mount point: what is written there lands on another disk.
            console.err("photodrain restore: \(folder) holds none of the library's files: an unmounted disk, or a folder emptied behind PhotoDrain's back? Nothing is restored; mount it and run again.")
            return .failure
        }
        let plan = PhotoRestore.plan(chosen, store: store)
        var summary = Summary(dryRun: dryRun)
        func emit(_ removal: AssetStore.Removal, source: String?, error: String?) {
            if json {
                console.json(Line(path: removal.path, photo: removal.photo, bytes: removal.size, source: source, error: error))
            } else if let error {
                console.out("\(console.red("stays")) \(removal.path): \(error)")
            } else {
                console.out("\(dryRun ? "would restore" : "restored") \(removal.path) from \(source ?? "") (\(formatBytes(Int(removal.size))))")
            }
        }
        for (removal, reason) in plan.blocked { emit(removal, source: nil, error: reason) }
        summary.failed = plan.blocked.count
        var stopped: TransferError?
        if dryRun {
            for item in plan.items { emit(item.removal, source: item.source.rawValue, error: nil) }
            summary.restored = plan.items.count
            summary.bytes = plan.items.reduce(0) { $0 + $1.removal.size }
        } else {
            var destinations: [String: any UploadDestination] = [:]
            for key in Set(plan.items.filter { $0.source != .inPlace }.map(\.removal.destination)) {
                destinations[key] = try destination(for: key, arguments)
            }
            let outcome = try await PhotoRestore.run(plan.items, store: store, destinations: destinations)
            for done in outcome.done { emit(done.removal, source: done.source?.rawValue, error: done.failure) }
            summary.restored = outcome.done.filter { $0.source != nil }.count
            summary.failed += outcome.done.filter { $0.source == nil }.count
            summary.bytes = outcome.restoredBytes
            stopped = outcome.stopped
            if let stopped { summary.error = "\(stopped.code.rawValue): \(stopped.message)" }
        }
        if json {
            console.json(summary)
        } else {
            var line = "\(summary.restored) file\(summary.restored == 1 ? "" : "s") (\(formatBytes(Int(summary.bytes)))) \(dryRun ? "would be restored" : "restored")"
            if summary.failed > 0 { line += ", \(summary.failed) not" }
            console.out(line + (dryRun ? " (dry run: nothing changed)" : ""))
        }
        if let stopped {
            console.err("photodrain restore: the destination could not be reached (\(stopped.code.rawValue): \(stopped.message)); run again")
            return stopped.isTransient ? .workRemains : .failure
        }
        return summary.failed > 0 ? .failure : .success
    }

    /// The destination a removal was proven at (its store key), or `--to` when given.
    static func destination(for key: String, _ arguments: ParsedArguments) throws -> any UploadDestination {
        // Never nil: the key is given.
        guard let (destination, _) = try TransferOptions.recordedDestination(key, arguments, command: spec.name) else {
            throw UsageError("no destination for \(key)", command: spec.name)
        }
        return destination
    }

    /// A PATH argument as the store names it: relative to the library's top. An absolute path
    /// must be inside the library (given as DIR, or as the store resolved it).
    static func relative(_ given: String, root: String, storeRoot: String) throws(UsageError) -> String {
        var path = given
        if path.hasPrefix("/") {
            let standard = (path as NSString).standardizingPath
            guard let inside = [root, storeRoot].compactMap({ top -> String? in
                standard.hasPrefix(top + "/") ? String(standard.dropFirst(top.count + 1)) : nil
            }).first else {
                throw UsageError("\(given) is not inside the library \(root)", command: spec.name)
            }
            path = inside
        }
        while path.hasPrefix("./") { path.removeFirst(2) }
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
