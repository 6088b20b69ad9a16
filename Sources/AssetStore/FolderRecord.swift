import UploadProtocol
import Foundation

/// What the last scan recorded of the library folder, so the next one reads only the folders that
/// changed (a rescan of a large, mostly unchanged library stays cheap): each folder's identity (device and inode), modification and
/// status-change times, its subfolders, and the skipped entries directly in it. The rows in a
/// folder left unread are not loaded here: the scan leaves them as they are, and counts them from
/// the rows it reads anyway.
///
/// A folder's modification time changes when an entry is added to it, removed from it or renamed
/// in it, but not when a file in it is rewritten in place (same name, no rename). So a folder
/// whose identity and times are unchanged is taken as it was, files and all, and such a rewrite is
/// found only by a full walk: `scan(full: true)` (`--rescan`), or any scan once the last full walk
/// is older than `AssetStore.fullWalkInterval`.
struct FolderRecord {
    struct Directory {
        var device: UInt64
        var inode: UInt64
        /// Negative when the folder must be read by the next scan: -1 when it changed too close to
        /// its scan to trust the time (see `racyMargin`) or held links; minus the time in
        /// milliseconds when `AssetStore.invalidateFolder` asked for it.
        var mtimeNanoseconds: Int64
        var ctimeNanoseconds: Int64
        var subdirectories: [[UInt8]]
        var hidden = 0
    }

    /// A folder whose modification time is this close (seconds) to the start of the scan that
    /// read it is read again by the next scan: the file system's clock is coarse, so an entry added
    /// just after the read can leave the time as it was (git's "racy" index entries).
    static let racyMargin: Double = 2

    var directories: [String: Directory] = [:]
    /// Skipped entries by the folder they are in.
    var problems: [String: [ScanProblem]] = [:]

    /// The folder of a relative path as `FileEntry.path` shows it: empty for the root. Escaping
    /// leaves `/` alone and no name holds one, so this is the shown path of the real folder.
    static func parent(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
    }

    /// What the walk may take instead of reading `directory`: nil unless the record has the same
    /// folder (identity) with the same modification and status-change times.
    func known(_ directory: WalkedDirectory) -> KnownDirectory? {
        guard let record = directories[directory.path], record.mtimeNanoseconds >= 0,
              record.device == directory.device, record.inode == directory.inode,
              record.mtimeNanoseconds == directory.mtimeNanoseconds,
              record.ctimeNanoseconds == directory.ctimeNanoseconds else { return nil }
        // A subfolder's own problem (it could not be opened) is found again when the walk tries it.
        let subfolders = Set(record.subdirectories.map(FileTree.shown))
        let problems = (problems[directory.path] ?? []).filter { problem in
            !subfolders.contains(problem.path.split(separator: "/").last.map(String.init) ?? problem.path)
        }
        return KnownDirectory(subdirectories: record.subdirectories, problems: problems, hidden: record.hidden)
    }

    /// The record in `db`, or nil when a full walk is due: there is none, or the last full walk
    /// started more than `fullWalkAfter` seconds before `now`.
    static func load(_ db: Database, now: Double, fullWalkAfter: Double) throws(StoreError) -> FolderRecord? {
        guard let last = try db.query("SELECT value FROM meta WHERE key = 'last_full_walk_at'").first?.first?.string.flatMap(Double.init),
              now - last <= fullWalkAfter else { return nil }
        var record = FolderRecord()
        for row in try db.query("SELECT path, device, inode, mtime_ns, ctime_ns, subdirectories, hidden FROM scan_directories") {
            guard let path = row[0].string, let device = row[1].int, let inode = row[2].int, let mtime = row[3].int,
                  let ctime = row[4].int else { continue }
            let names = (row[5].string ?? "").split(separator: "/").compactMap { Hex.bytes(fromHex: String($0)) }
            record.directories[path] = Directory(device: UInt64(bitPattern: Int64(device)), inode: UInt64(bitPattern: Int64(inode)),
                                                 mtimeNanoseconds: Int64(mtime), ctimeNanoseconds: Int64(ctime), subdirectories: names,
                                                 hidden: row[6].int ?? 0)
        }
        guard !record.directories.isEmpty else { return nil }
        for row in try db.query("SELECT path, message FROM scan_problems") {
            guard let path = row[0].string, path != "." else { continue }
            record.problems[parent(of: path), default: []].append(ScanProblem(path: path, message: row[1].string ?? ""))
        }
        return record
    }

    /// Replaces the record in `db` with the folders of `walk`, which started at `started`. A
    /// folder whose time is within `racyMargin` of it, that holds links, that is in `untrusted` or
    /// that was invalidated since `started`, is kept with time -1, so it is read again; a shown path two folders share (a name that is not UTF-8 whose escaped
    /// form is another's real name) is not kept at all, so both are always read.
    static func save(_ walk: Walk, started: Double, untrusted: Set<String> = [], _ db: Database) throws(StoreError) {
        // Folders invalidated (`AssetStore.invalidateFolder`) since this scan started: it may have
        // read them before the change it was told of, so they stay untrusted.
        var untrusted = untrusted
        for row in try db.query("SELECT path FROM scan_directories WHERE mtime_ns < -1 AND -mtime_ns >= ?",
                                [.integer(Int64((started - 1) * 1000))]) {
            if let path = row[0].string { untrusted.insert(path) }
        }
        try db.run("DELETE FROM scan_directories")
        var count: [String: Int] = [:]
        for directory in walk.directories { count[directory.path, default: 0] += 1 }
        let insert = try db.prepare("INSERT INTO scan_directories(path, device, inode, mtime_ns, ctime_ns, subdirectories, hidden) VALUES (?, ?, ?, ?, ?, ?, ?)")
        let trustedBefore = Int64((started - racyMargin) * 1e9)
        for directory in walk.directories where count[directory.path] == 1 {
            let trusted = directory.mtimeNanoseconds < trustedBefore && !directory.holdsLinks && !untrusted.contains(directory.path)
            let mtime = trusted ? directory.mtimeNanoseconds : -1
            try insert.bind([.text(directory.path), .integer(Int64(bitPattern: directory.device)), .integer(Int64(bitPattern: directory.inode)),
                             .integer(mtime), .integer(directory.ctimeNanoseconds), .text(directory.subdirectories.map(Hex.string).joined(separator: "/")),
                             .integer(Int64(directory.hidden))])
            while try insert.step() {}
        }
    }
}

/// When the library was last scanned, and last walked in full, and the change token that scan
/// recorded: what `status` shows of the folder's tracking.
public struct ScanState: Sendable, Equatable {
    /// The token at the end of the last scan (`changes(since:)` from it: what later scans found).
    public var token: ChangeToken?
    /// When the last scan started.
    public var scannedAt: Date?
    /// When the last full walk (every folder read) started.
    public var fullWalkAt: Date?
}
