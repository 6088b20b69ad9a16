import AssetStore
import Drain
import Foundation

/// The options every command that reads a library's store shares: the folder and `--store`.
enum LibraryOptions {
    static let store = OptionSpec.option("store", "PATH", "The library's SQLite store.",
                                         default: "$XDG_STATE_HOME/photodrain/<folder>-<hash>.sqlite")

    static let include = OptionSpec.option("include", "GLOB", "Work on (and show) only files whose path in the library matches; repeatable: any may match.")
    static let exclude = OptionSpec.option("exclude", "GLOB", "Leave alone files whose path in the library matches; repeatable; wins over --include.")
    static let filters = [include, exclude]
    static let rescan = OptionSpec.flag("rescan", "Read every folder of the library (a full walk) instead of only those whose modification time changed: finds a file rewritten in place, which leaves its folder's time alone (even one whose modification time was set back: its change time tells). A full walk also happens by itself once the last one is over 24 h old.")
    /// `--rescan-interval` for `analyze` (drain's says more, about --watch), and the one reading
    /// of it: the drain's rescan rule, seconds, 0 meaning only the scan at the start.
    static let rescanInterval = OptionSpec.option("rescan-interval", "SECONDS", "Scan the library again this often while working, and once before finishing, so photos added meanwhile go in this run; 0: only the scan at the start.", default: "\(Int(DrainOptions.defaultRescanIntervalSeconds))")
    static func rescanInterval(_ arguments: ParsedArguments) throws(UsageError) -> Duration? {
        let seconds = try arguments.double("rescan-interval", default: DrainOptions.defaultRescanIntervalSeconds, range: 0...86_400)
        return seconds > 0 ? .seconds(seconds) : nil
    }
    static let includeHidden = OptionSpec.flag("include-hidden", "Take hidden files and folders (names starting with a dot) into the library too, from now on for this store (a later run without the flag keeps them); by default they are left out and status counts them.")
    static let dryRun = OptionSpec.flag("dry-run", "Only list what would be analysed and uploaded (with --json, as JSON lines); touches neither the store nor the destination.")

    /// The --help text on --include and --exclude, for each command that takes them.
    static let filterDiscussion = "\n" + """
        --include and --exclude take fnmatch(3) globs, matched against the path relative to DIR with
        no flags: * ? and [...] match / too (so '*.jpg' matches at any depth), case counts, and a
        backslash quotes. A file is in when it matches any --include (or none is given) and no
        --exclude. Filters never drop a file's row: the next run without them picks up the rest.
        """

    /// The --help text on incremental scans and --rescan, for each command that scans.
    static let scanDiscussion = "\n" + """
        Scans are incremental: a folder whose modification time has not changed since the last
        scan is not read again. Adding, removing or renaming a file changes its folder's time;
        rewriting a file in place (same name, no rename) does not, so such a change is found only
        by a full walk: --rescan, or by itself when the last full walk is over 24 hours old. A file
        is known by its size, modification time, change time, inode and device: a rewrite that sets
        the modification time back (touch -r, a tool that keeps it) is found by its change time and
        hashed again; analysed and sent again only when its bytes differ (a chmod alone costs the
        hash).
        """

    /// The examples on --include and --exclude.
    static func filterExamples(_ command: String) -> [(String, String)] {
        [("photodrain \(command) ~/Pictures --include '2019/*' --exclude '*.MOV'", "only 2019, no QuickTime videos"),
         ("photodrain \(command) ~/Pictures --include '*.[jJ][pP][gG]' --include '*.[hH][eE][iI][cC]'", "JPEG and HEIC of either case")]
    }

    /// The --include/--exclude filter; an empty pattern is a usage error.
    static func filter(_ arguments: ParsedArguments) throws -> PathFilter {
        do {
            return try PathFilter(include: arguments.strings("include"), exclude: arguments.strings("exclude"))
        } catch {
            throw UsageError(error.message, command: arguments.command)
        }
    }

    /// Opens the store for the library folder `DIR` (the first positional, or the current folder),
    /// narrowed by --include/--exclude when the command takes them. With `dryRun` and no store yet,
    /// an empty store in memory stands in, so a dry run creates no file. With `readOnly` (commands
    /// that only read the store), nothing is written. With `unfiltered`, the store sees every row
    /// whatever --include/--exclude say (free-space: a photo's companions go with it, filtered or not).
    static func open(_ arguments: ParsedArguments, dryRun: Bool = false, readOnly: Bool = false, unfiltered: Bool = false) throws -> AssetStore {
        let folder = arguments.positionals.first ?? FileManager.default.currentDirectoryPath
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UsageError("\(folder) is not a folder", command: arguments.command)
        }
        let filter = unfiltered ? PathFilter.all : try filter(arguments)
        var path = arguments.string("store")
        if readOnly {
            // A reader never creates a store: an empty one would show zeros as if it were a library's.
            let existing = try path ?? AssetStore.defaultPath(forFolder: folder)
            guard FileManager.default.fileExists(atPath: existing) else {
                throw NoStoreYet(folder: folder, store: existing, command: arguments.command)
            }
        }
        if dryRun {
            let existing = try path ?? AssetStore.defaultPath(forFolder: folder)
            if !FileManager.default.fileExists(atPath: existing) { path = ":memory:" }
        }
        let store = try AssetStore(root: folder, path: path, filter: filter, readOnly: readOnly)
        if !readOnly && !dryRun && arguments.flag("include-hidden") {
            try store.includeHiddenFiles()
        }
        return store
    }
}

/// `status` or `verdicts` on a library no runner has scanned yet (or with a `--store` that does not
/// exist): there is nothing to show, and nothing is created.
struct NoStoreYet: Error, CustomStringConvertible {
    let folder: String
    let store: String
    let command: String
    var description: String {
        "there is no store for \(folder) yet (looked for \(store)): run `photodrain analyze \(folder)` or `photodrain drain \(folder) --to URL` first, or pass --store PATH"
    }
}

/// A timestamp for people and machines: ISO 8601 in UTC.
func isoTimestamp(_ seconds: Double?) -> String? {
    guard let seconds, seconds.isFinite else { return nil }
    // By hand, in UTC: a formatter made per call (ICU's date symbols copied each time) was most
    // of `verdicts`' time on a large library.
    // To the millisecond, then the whole second, as Foundation's ISO 8601 formatter does.
    var time = time_t(((seconds * 1000).rounded() / 1000).rounded(.down))
    var parts = tm()
    guard gmtime_r(&time, &parts) != nil else { return nil }
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let year = Int(parts.tm_year) + 1900
    let yearText = year < 1000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
    return "\(yearText)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
}
