#if canImport(Glibc)
import Glibc
#endif
import AssetStore
import Drain
import Foundation
import SystemSupport
import Transfer

/// `photodrain free-space DIR`: frees the space of photos proven safe at the library's
/// destination, and nothing else (issue 33). The decision is `Drain.FreeSpacePlan`, its facts
/// `Drain.FreeSpaceCheck`: a verified proof of receipt, the file hashed again now, the
/// destination asked again now, companions with their photo.
enum FreeSpaceCommand: Command {
    static let spec = CommandSpec(
        name: "free-space",
        abstract: "Free the space of photos proven safe at the library's destination, and nothing else (--dry-run lists what would go and what stays, with why).",
        arguments: "DIR",
        discussion: """
        A photo qualifies only when, at the moment of the run: it has proof of receipt at the
        library's destination (--to, or the one the library's uploads go to; never a photo uploaded
        with --accept-unverified, nor one from before receipts were proven until photodrain verify
        confirms it); the file, hashed again now, is still the bytes the store recorded (a photo
        edited since its upload stays); the destination answers now that it holds exactly those
        bytes (the same check as photodrain verify; with --deep, by downloading and hashing them);
        and its companions (Live Photo movie, .AAE, .xmp) qualify too: a photo and its companions go
        together or not at all.

        Selection: --older-than DURATION (by capture date, else modification time: 30d, 12h, 2w,
        1y, 0 for any age), --keep-recent N (the N newest stay whatever their age), --until-free
        SIZE|PERCENT (stop once the library's filesystem has that much free; oldest go first), and
        --include/--exclude as drain has them (companions follow their photo).

        Guards: a destination that cannot be reached removes nothing (exit 75), one that refuses
        (a web page, a refused token) removes nothing (exit 1); a run that would remove more than
        --max-fraction of the library's files (default 50%) stops and says why; so does one while
        the library folder holds no photos (an unmounted disk, an emptied folder); no removal
        follows an error reading the store.

        Removal is reversible: files move, by rename only (never copied, never across
        filesystems), into a trash on the library's filesystem in the freedesktop.org layout (a
        desktop's file manager shows and restores them): the home trash ($XDG_DATA_HOME/Trash) when
        it is on that filesystem, else .Trash-$UID at the top of its mount, else .photodrain-trash
        at the library's top. They stay --trash-days (default 30); every later run empties the
        trash of what is older, and --empty-trash of all of the library's. --delete removes at once
        (asked to confirm on a terminal; elsewhere --yes is required). The store records each
        removal (path, digest, destination, proof, when, where it went); scans and drains never
        see the trash, and a run killed at any point leaves every photo in place, in the trash,
        or (after --delete) proven at the destination: the next run finishes the job.
        """ + "\n" + LibraryOptions.filterDiscussion,
        options: [LibraryOptions.store] + LibraryOptions.filters + TransferOptions.all.filter { $0.name != "accept-unverified" && $0.name != "bwlimit" } + [
            .option("older-than", "DURATION", "Only photos at least this old, by capture date else modification time: 0, 90s, 45m, 12h, 30d, 2w, 1y.", default: "0"),
            .option("keep-recent", "N", "Keep the N newest photos whatever their age.", default: "0"),
            .option("until-free", "SIZE|PERCENT", "Stop once the library's filesystem has this much free: 20G, or 15% of its size."),
            .option("max-fraction", "PERCENT", "Remove nothing when the run would remove more than this share of the library's files; 100% lifts it.", default: "50%"),
            .flag("deep", "Download every photo from the destination and hash it here before trusting it (reads every byte back)."),
            .option("trash-days", "N", "Keep removed photos in the trash this many days; later runs empty it of older ones.", default: "30"),
            .flag("empty-trash", "Empty the trash of every photo this library's runs put there (each is at the destination), and do nothing else."),
            .flag("delete", "Remove at once instead of moving to the trash (asked to confirm on a terminal)."),
            .flag("yes", "Do not ask before --delete (required when not on a terminal)."),
            .flag("dry-run", "List what would be removed and what stays, with each reason; remove nothing."),
            .option("parallel", "N", "Photos checked at once.", default: "4"),
            .flag("json", "JSON lines: one per photo (action remove or keep, with the reason), then a summary."),
        ],
        positionals: (1, 1),
        examples: [
            ("photodrain free-space ~/Pictures --older-than 0 --dry-run", "what could go now, and why the rest stays"),
            ("photodrain free-space ~/Pictures --older-than 1y", "move every proven photo over a year old to the trash"),
            ("photodrain free-space ~/Pictures --empty-trash", "empty the trash of what earlier runs moved there"),
            ("photodrain free-space ~/Pictures --older-than 90d --keep-recent 500 --dry-run", "photos over 90 days old, the newest 500 kept"),
            ("photodrain free-space ~/Pictures --until-free 20% --deep --dry-run", "the oldest, until a fifth of the disk is free, each downloaded back and hashed"),
            ("photodrain free-space ~/Pictures --dry-run --json | jq -r 'select(.action == \"keep\") | [.path, .reason] | @tsv'", "why each photo stays"),
        ],
        exitCodes: [(0, "done: every photo that qualified was removed (or, with --dry-run, listed)"),
                    (1, "the destination refused the check (URL, token), a guard stopped the run (--max-fraction, an empty or unmounted library), or the store failed: nothing removed; or some qualifying photos could not be moved (each named with why)"),
                    (64, "usage error"), (75, "the destination could not be reached or was busy: nothing removed; run again")]
    )

    /// One photo's line in `--json`.
    struct Line: Encodable {
        let path: String
        /// `remove` or `keep`.
        let action: String
        var reason: String?
        var why: String?
        let bytes: Int64
        let companions: [String]
        /// The trash folder the files went to.
        var trash: String?
    }

    struct Summary: Encodable {
        let event = "summary"
        let destination: String
        var dryRun: Bool
        var remove = 0
        var files = 0
        var bytes: Int64 = 0
        var kept = 0
        var unchecked = 0
        var stop: String?
        var error: String?
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let dryRun = arguments.flag("dry-run")
        let selection = try selection(arguments)
        let parallel = try arguments.int("parallel", default: 4, range: 1...64)
        let trashDays = try arguments.int("trash-days", default: 30, range: 0...36500)
        let deep = arguments.flag("deep")
        let json = arguments.flag("json")
        let mode: FreeSpaceRemoval.Mode = arguments.flag("delete") ? .delete : .trash
        if mode == .delete && !dryRun && !arguments.flag("yes") && isatty(0) == 0 {
            throw UsageError("--delete removes photos for good: pass --yes as well when not on a terminal", command: spec.name)
        }
        let filter = try LibraryOptions.filter(arguments)
        let folder = arguments.positionals[0]
        let store = try LibraryOptions.open(arguments, dryRun: dryRun, unfiltered: true)
        defer { store.checkpoint() }
        let console = Console.shared
        if !dryRun {
            // A run killed earlier left intents: settle them from the disk before anything else.
            let recovery = try FreeSpaceRemoval.recover(store: store)
            if recovery.finished + recovery.undone > 0 {
                console.err("photodrain free-space: settled an interrupted run: \(recovery.finished) removal(s) finished, \(recovery.undone) undone")
            }
            let emptyAll = arguments.flag("empty-trash")
            let purged = try FreeSpaceRemoval.purge(store: store, before: emptyAll ? nil : Date().timeIntervalSince1970 - Double(trashDays) * 86400)
            if emptyAll {
                if json {
                    console.json(TrashSummary(purged: purged.count, bytes: purged.bytes))
                } else {
                    console.out("emptied the trash of \(purged.count) file\(purged.count == 1 ? "" : "s") (\(formatBytes(Int(purged.bytes)))); photodrain restore brings them back from the destination")
                }
                return .success
            }
            if purged.count > 0 && !json {
                console.err("photodrain free-space: emptied the trash of \(purged.count) file(s) older than \(trashDays) days")
            }
        }
        guard let (destination, url) = try TransferOptions.recordedDestination(try store.activeDestination(), arguments, command: spec.name) else {
            throw UsageError("this library has no uploads recorded yet, so nothing is proven safe anywhere: drain it first", command: spec.name)
        }
        let identity = destination.identity.key
        // As verify: marks a store kept under the URL's former form are this destination's.
        try store.adoptDestination(identity, formerly: url)
        let space = filesystemSpace(folder)
        let result = try await FreeSpaceCheck.run(
            store: store, filter: filter, destination: destination, identity: identity, deep: deep, selection: selection,
            libraryLooksEmpty: try libraryLooksEmpty(folder, store: store), freeBytes: space.free, totalBytes: space.total,
            now: Date().timeIntervalSince1970, parallel: parallel)
        var summary = Summary(destination: identity, dryRun: dryRun)
        func emit(_ group: FreeSpacePlan.Group, action: String, reason: String? = nil, why: String? = nil, place: String? = nil) {
            let line = Line(path: group.photo.path, action: action, reason: reason, why: why, bytes: group.bytes,
                            companions: group.companions.map(\.path), trash: place)
            if json {
                console.json(line)
            } else if action == "keep" {
                console.out("keep    \(group.photo.path): \(why ?? "")")
            } else {
                let with = group.companions.isEmpty ? "" : " with " + group.companions.map(\.path).joined(separator: ", ")
                let to = place.map { " -> \($0)" } ?? ""
                console.out("\(action.padding(toLength: 7, withPad: " ", startingAt: 0)) \(group.photo.path)\(with) (\(formatBytes(Int(group.bytes))))\(to)")
            }
        }
        for (group, reason) in result.outcome.keep + result.keptByAge { emit(group, action: "keep", reason: reason.code, why: reason.text) }
        summary.kept = result.outcome.keep.count + result.keptByAge.count
        summary.unchecked = result.unchecked.count
        summary.stop = result.outcome.stop?.code
        if let stopped = result.stopped { summary.error = "\(stopped.code.rawValue): \(stopped.message)" }
        var failedRemovals = 0
        if dryRun || result.stopped != nil || result.outcome.stop != nil {
            // Nothing is removed: what qualified is listed as what would go.
            for group in result.outcome.remove { emit(group, action: "remove") }
            summary.remove = result.outcome.remove.count
            summary.files = result.outcome.remove.reduce(0) { $0 + $1.files.count }
            summary.bytes = result.outcome.freedBytes
        } else {
            let groups = result.outcome.removable
            if mode == .delete && !groups.isEmpty && !arguments.flag("yes") {
                console.err("photodrain free-space: delete \(groups.count) photo(s) (\(formatBytes(Int(result.outcome.freedBytes)))) for good? Each is proven at \(identity). [y/N]")
                let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
                guard answer == "y" || answer == "yes" else {
                    console.err("photodrain free-space: nothing deleted")
                    return .success
                }
            }
            let trashes = Trash.candidates(root: store.root)
            let proof = deep ? "verified-deep" : "verified"
            let removal = await onOwnThreadUntilDone("free-space removal") { () -> Result<FreeSpaceRemoval.Outcome, StoreError> in
                do throws(StoreError) {
                    return .success(try FreeSpaceRemoval.remove(groups, records: result.records, serverIDs: result.serverIDs, store: store,
                                                                destination: identity, proof: proof, mode: mode, trashes: trashes))
                } catch {
                    return .failure(error)
                }
            }
            let done = try removal.get()
            for (group, records) in done.removed {
                emit(group, action: mode == .delete ? "deleted" : "trashed", place: records.first?.trashPath.map { ($0 as NSString).deletingLastPathComponent })
            }
            for (group, reason) in done.failed {
                emit(group, action: "keep", reason: "removal-failed", why: reason)
            }
            failedRemovals = done.failed.count
            summary.remove = done.removed.count
            summary.files = done.removed.reduce(0) { $0 + $1.records.count }
            summary.bytes = done.freedBytes
            summary.kept += done.failed.count
        }
        if json {
            console.json(summary)
        } else {
            let what = "\(summary.remove) photo\(summary.remove == 1 ? "" : "s") (\(summary.files) files, \(formatBytes(Int(summary.bytes))))"
            var line: String
            if dryRun && (result.stopped != nil || result.outcome.stop != nil) {
                line = "\(what) qualified, but the run would stop: none would be removed, \(summary.kept) kept"
            } else if dryRun {
                line = "\(what) would be removed, \(summary.kept) kept"
            } else if result.stopped != nil || result.outcome.stop != nil {
                line = "\(what) qualified, none removed, \(summary.kept) kept"
            } else if mode == .delete {
                line = "\(what) deleted, \(summary.kept) kept"
            } else {
                line = "\(what) moved to the trash for \(trashDays) days, \(summary.kept) kept"
            }
            if summary.unchecked > 0 { line += ", \(summary.unchecked) not checked" }
            console.out(line + (dryRun ? " (dry run: nothing removed)" : ""))
        }
        if let stopped = result.stopped {
            let advice = stopped.code == .unauthorized ? " Check --to and --token-file." : ""
            console.err("photodrain free-space: the destination could not be checked (\(stopped.code.rawValue): \(stopped.message)); nothing is removed.\(advice)")
            return stopped.isTransient ? .workRemains : .failure
        }
        if let stop = result.outcome.stop {
            console.err("photodrain free-space: \(stop.text)")
            return .failure
        }
        return failedRemovals > 0 ? .failure : .success
    }

    /// The `--empty-trash --json` line.
    struct TrashSummary: Encodable {
        let event = "emptied"
        let purged: Int
        let bytes: Int64
    }

    /// The selection options, checked.
    static func selection(_ arguments: ParsedArguments) throws(UsageError) -> FreeSpacePlan.Selection {
        var selection = FreeSpacePlan.Selection()
        if let text = arguments.string("older-than") {
            guard let seconds = parseDuration(text) else {
                throw UsageError("--older-than wants a duration such as 0, 90s, 45m, 12h, 30d, 2w or 1y, not '\(text)'", command: arguments.command)
            }
            selection.olderThan = seconds
        }
        selection.keepRecent = try arguments.int("keep-recent", default: 0)
        if let text = arguments.string("until-free") {
            if text.hasSuffix("%") {
                guard let share = parsePercent(text), share > 0, share <= 1 else {
                    throw UsageError("--until-free wants a size such as 20G or a share such as 15%, not '\(text)'", command: arguments.command)
                }
                selection.untilFree = .fraction(share)
            } else {
                guard let bytes = parseByteCount(text) else {
                    throw UsageError("--until-free wants a size such as 20G or a share such as 15%, not '\(text)'", command: arguments.command)
                }
                selection.untilFree = .bytes(Int64(bytes))
            }
        }
        if let text = arguments.string("max-fraction") {
            guard let share = parsePercent(text), share > 0, share <= 1 else {
                throw UsageError("--max-fraction wants a share from 1% to 100%, not '\(text)'", command: arguments.command)
            }
            selection.maxFraction = share
        }
        return selection
    }

    /// `0`, `90s`, `45m`, `12h`, `30d`, `2w`, `1y` (365 days) in seconds; a bare number is seconds.
    static func parseDuration(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400]
        var digits = Substring(text.lowercased())
        var unit = 1.0
        if let last = digits.last, let factor = units[last] {
            unit = factor
            digits = digits.dropLast()
        }
        guard let value = Double(digits), value.isFinite, value >= 0 else { return nil }
        return value * unit
    }

    /// `15%` as 0.15; nil unless a number followed by `%`.
    static func parsePercent(_ text: String) -> Double? {
        guard text.hasSuffix("%"), let value = Double(text.dropLast()), value.isFinite else { return nil }
        return value / 100
    }

    /// Free and total bytes of the filesystem holding `folder` (zeros when it cannot be asked:
    /// then `--until-free` counts nothing as free, and frees as much as it may).
    static func filesystemSpace(_ folder: String) -> (free: Int64, total: Int64) {
        let attributes = try? FileManager.default.attributesOfFileSystem(forPath: folder)
        let free = (attributes?[.systemFreeSize] as? NSNumber)?.int64Value ?? 0
        let total = (attributes?[.systemSize] as? NSNumber)?.int64Value ?? 0
        return (free, total)
    }

    /// True when the library folder holds nothing now but hidden entries and the store's own
    /// files while the store knows files in it: an unmounted disk leaves its mount point so, and
    /// so does a folder emptied behind PhotoDrain's back. (A library `free-space` emptied itself
    /// has no rows left, and is no alarm.)
    static func libraryLooksEmpty(_ folder: String, store: AssetStore) throws -> Bool {
        let own = Set(store.ownPaths.map { ($0 as NSString).lastPathComponent })
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let visible = entries.filter { !$0.hasPrefix(".") && !own.contains($0) }
        let known = try store.assets()
        return visible.isEmpty && !known.isEmpty
    }
}
