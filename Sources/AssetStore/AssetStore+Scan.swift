import Foundation
import UploadProtocol

/// Scanning and change tracking: the walk of the library folder brought into the rows, the
/// folders a later scan must read again, and the change history runners follow.
extension AssetStore {

    /// A scan walks the whole folder (reads every directory) when the last full walk started
    /// longer ago than this (seconds), whatever it is asked: the bound on how long a file rewritten
    /// in place, which an incremental scan cannot see, goes unnoticed.
    public static let fullWalkInterval: Double = 24 * 3600

    /// Walks the library folder and brings the rows in line with it: new files are added, changed
    /// ones (size or modification time) lose their verdict and upload state, missing ones are
    /// removed. Every regular file but hidden ones and the store's own is a row (see `FileTree`);
    /// the entries skipped, with why, are kept for `skippedEntries()`. Records each change and
    /// returns them with the new token.
    ///
    /// The scan is incremental: a directory whose identity and times (modification and status
    /// change) are what the last scan recorded is not read again, and its rows stand as they are. A file rewritten in
    /// place (same name, no rename) leaves its directory's time alone, so only a full walk finds
    /// it: with `full`, or when the last full walk started more than `fullWalkAfter` seconds ago
    /// (and on the first scan).
    ///
    /// With a `quietPeriod` (seconds), a file changed (modification or status-change time) that
    /// recently is left for a later scan, as it may still be being copied: a new one gets no row
    /// yet, a known one keeps its row, and its folder is read again next time
    /// (`ScanReport.settling`). Throws `unreadableRoot` when the folder is gone, or the store's error.
    ///
    /// A file whose size and modification time are its row's but whose stamp (status-change time,
    /// inode, device: `FileStamp`) is not may have been rewritten with its time set back (`touch
    /// -r`, an editor that keeps it), or only had its mode or extended attributes changed (chmod,
    /// a backup tool). `rehash` tells which: the file is hashed again (outside the database's
    /// lock), and when the digest is the one analysis banked only the new stamp is recorded, so
    /// nothing is analysed or uploaded again; when it differs (or the file cannot be read, or the
    /// row has no digest to compare with) the file is modified like any other. Without `rehash`
    /// such a file is left as it is, and its folder read by the next scan, for one that hashes.
    public func scan(full: Bool = false, fullWalkAfter: Double = AssetStore.fullWalkInterval,
                     quietPeriod: Double = 0, rehash: ContentHasher? = nil) throws(StoreError) -> ScanReport {
        let started = FileTree.now()
        let folders: FolderRecord? = full ? nil : try withDatabase { (db) throws(StoreError) -> FolderRecord? in
            try FolderRecord.load(db, now: started, fullWalkAfter: fullWalkAfter)
        }
        let hidden = try includesHidden()
        let walk = try FileTree.walk(root: root, excluding: ownFiles, includeHidden: hidden) { directory in folders?.known(directory) }
        let problems = walk.problems
        // Rows in directories taken from the record stand as they are: this scan did not look.
        let unread = Set(walk.directories.lazy.filter { !$0.read }.map(\.path))
        let files = walk.files
        let digests = try rehash.map { (hash) throws(StoreError) in try restampedDigests(files, hash: hash) } ?? [:]
        // A file changed after this may still be being written: it is not taken yet.
        let quietSince = quietPeriod > 0 ? Int64((started - quietPeriod) * 1e9) : .max
        let now = FileTree.now()
        // A time ahead of the clock (a camera's wrong clock kept by `cp -p`, a server's clock) is
        // not a copy in progress: only a change between `quietSince` and now is.
        let latest = Int64((now + 1) * 1e9)
        func stillChanging(_ file: FileEntry) -> Bool { file.changedNanoseconds > quietSince && file.changedNanoseconds <= latest }
        return try withDatabase { (db) throws(StoreError) -> ScanReport in
            try db.transaction { () throws(StoreError) -> ScanReport in
                // Only the rows of folders this scan read are compared with what it found; the
                // others are counted as they stream by, so an incremental scan of a large library
                // holds the rows of its changed folders, not of the whole library.
                var known: [String: ScanDiff.Known] = [:]
                var standing = 0
                try db.forEach("SELECT id, path, size, mtime_ns, ctime_ns, inode, device, sha256 FROM assets") { row in
                    let path = row[1].string ?? ""
                    if !unread.isEmpty && unread.contains(FolderRecord.parent(of: path)) {
                        standing += 1
                        return
                    }
                    known[path] = ScanDiff.Known(id: Int64(row[0].int ?? 0), size: row[2].int ?? 0, mtimeNanoseconds: Int64(row[3].int ?? 0),
                                                 stamp: FileStamp(ctime: row[4], inode: row[5], device: row[6]), sha256: row[7].string)
                }
                let diff = ScanDiff.between(known: &known, files: files, digests: digests, stillChanging: stillChanging)
                var changes = try Self.apply(diff, db, now: now)
                let settling = diff.settling
                try db.run("DELETE FROM scan_problems")
                for problem in problems {
                    try db.run("INSERT OR REPLACE INTO scan_problems(path, message, seen_at) VALUES (?, ?, ?)",
                               [.text(problem.path), .text(problem.message), .real(now)])
                }
                // Links change only with the files: a scan that found nothing new leaves them (drain
                // rescans every few seconds, and linking reads every row).
                let neverLinked = try db.query("SELECT 1 FROM meta WHERE key = 'companions_linked'").isEmpty
                if neverLinked || !changes.added.isEmpty || !changes.modified.isEmpty || !changes.removed.isEmpty {
                    try Companions.link(db, now: now)
                    try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('companions_linked', '1')")
                }
                let end = try Self.currentSequence(db)
                try db.run("DELETE FROM changes WHERE seq <= ?", [.integer(end - Int64(historyLimit))])
                // Stores made before the `scan_problems` table kept the list as JSON in `meta`;
                // the table replaces it, so the old copy is dropped rather than left to go stale.
                try db.run("DELETE FROM meta WHERE key = 'scan_skipped'")
                changes.token = ChangeToken(sequence: end)
                try FolderRecord.save(walk, started: started, untrusted: Set(settling.map(FolderRecord.parent(of:))).union(diff.unhashed), db)
                var state: [(String, String)] = [("folder_token", changes.token.description), ("last_scan_at", String(started))]
                if folders == nil { state.append(("last_full_walk_at", String(started))) }
                for (key, value) in state {
                    try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(key), .text(value)])
                }
                return ScanReport(changes: changes, photoCount: files.count - diff.settlingNew + standing, problems: problems, directoriesRead: walk.directoriesRead,
                                  directoriesUnchanged: walk.directories.count - walk.directoriesRead, fullWalk: folders == nil,
                                  settling: settling)
            }
        }
    }

    /// The last step of a scan: writes `diff` into the rows, recording each change in the history.
    /// A modified file's row starts a new version (`Schema.resetForNewVersion`).
    private static func apply(_ diff: ScanDiff, _ db: Database, now: Double) throws(StoreError) -> ChangeSet {
        var changes = ChangeSet(token: ChangeToken(sequence: try currentSequence(db)))
        let insert = try db.prepare("""
            INSERT INTO assets(path, size, mtime_ns, discovered_at, raw_path, ctime_ns, inode, device) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let modify = try db.prepare("""
            UPDATE assets SET size = ?, mtime_ns = ?, ctime_ns = ?, inode = ?, device = ?, \(Schema.resetForNewVersion) WHERE id = ?
            """)
        let restamp = try db.prepare("UPDATE assets SET ctime_ns = ?, inode = ?, device = ? WHERE id = ?")
        let remove = try db.prepare("DELETE FROM assets WHERE id = ?")
        let record = try db.prepare("INSERT INTO changes(path, kind, at) VALUES (?, ?, ?)")
        func recorded(_ path: String, _ kind: String) throws(StoreError) {
            try record.bind([.text(path), .text(kind), .real(now)])
            while try record.step() {}
        }
        for change in diff.changes {
            switch change {
            case .added(let file):
                try insert.bind([.text(file.path), .integer(Int64(file.size)), .integer(file.mtimeNanoseconds), .real(now),
                                 file.rawPath.map { .text(Hex.string($0)) } ?? .null] + file.stamp.values)
                while try insert.step() {}
                changes.added.append(file.path)
                try recorded(file.path, "added")
            case .modified(let id, let file):
                try modify.bind([.integer(Int64(file.size)), .integer(file.mtimeNanoseconds)] + file.stamp.values + [.integer(id)])
                while try modify.step() {}
                changes.modified.append(file.path)
                try recorded(file.path, "modified")
            case .restamped(let id, let stamp):
                try restamp.bind(stamp.values + [.integer(id)])
                while try restamp.step() {}
            }
        }
        for (path, id) in diff.removed {
            try remove.bind([.integer(id)])
            while try remove.step() {}
            changes.removed.append(path)
            try recorded(path, "removed")
        }
        return changes
    }

    /// How a scan hashes a file whose stamp changed while its size and modification time did not
    /// (`scan(rehash:)`): the SHA-256 of the file at an absolute path as lowercase hex, as analysis
    /// banks it; nil when the file cannot be read. The store reads no file's bytes itself: the
    /// runners pass SystemSupport's (`FileReader.sha256Hex`).
    public typealias ContentHasher = (_ path: String) -> String?

    /// What hashing a restamped file found.
    enum Rehashed {
        case digest(String)
        case unreadable
    }

    /// Hashes the walked files whose size and modification time are their row's, whose stamp is
    /// not, and whose row has a digest to compare with: by path. Finds them first (a lookup by
    /// path per walked file: an incremental scan walks few), then hashes without holding the
    /// database.
    private func restampedDigests(_ files: [FileEntry], hash: ContentHasher) throws(StoreError) -> [String: Rehashed] {
        guard !files.isEmpty else { return [:] }
        let restamped = try withDatabase { (db) throws(StoreError) -> [(file: FileEntry, id: Int64)] in
            let lookup = try db.prepare("SELECT id, size, mtime_ns, ctime_ns, inode, device FROM assets WHERE path = ? AND sha256 IS NOT NULL")
            var restamped: [(file: FileEntry, id: Int64)] = []
            for file in files {
                try lookup.bind([.text(file.path)])
                guard try lookup.step() else { continue }
                let row = lookup.row()
                guard row[1].int == file.size, row[2].int.map(Int64.init) == file.mtimeNanoseconds,
                      let stamp = FileStamp(ctime: row[3], inode: row[4], device: row[5]), stamp != file.stamp else { continue }
                restamped.append((file, Int64(row[0].int ?? 0)))
            }
            return restamped
        }
        var digests: [String: Rehashed] = [:]
        for (file, id) in restamped {
            let path = openablePath(id: id, path: file.path, rawPath: file.rawPath)
            digests[file.path] = hash(path).map(Rehashed.digest) ?? .unreadable
        }
        return digests
    }

    /// Makes the next scan read the folder that holds `asset` whatever its times say. For a file
    /// found not to match its row (`fileMatches`): rewritten in place, which leaves its folder's
    /// times alone, it would otherwise keep its stale row until the next full walk.
    public func invalidateFolder(of asset: AssetRecord) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            // Minus the time in milliseconds: a scan running now keeps the mark (`FolderRecord.save`).
            _ = try db.run("UPDATE scan_directories SET mtime_ns = ? WHERE path = ?",
                           [.integer(-max(2, Int64(FileTree.now() * 1000))), .text(FolderRecord.parent(of: asset.path))])
        }
    }

    /// Makes the next scan read these folders (relative to the library, as bytes, `/`-separated;
    /// empty for the library folder itself) whatever their times say: the folders a watcher saw
    /// change, which include files rewritten in place, invisible in their folder's times.
    /// Folders the store has no record of are read by the next scan anyway.
    public func invalidateFolders(_ folders: some Collection<[UInt8]>) throws(StoreError) {
        guard !folders.isEmpty else { return }
        let mark = -max(2, Int64(FileTree.now() * 1000))
        try withDatabase { (db) throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                for folder in folders {
                    // As the walk shows it: each name that is not UTF-8 escaped on its own.
                    let shown = folder.split(separator: 0x2F, omittingEmptySubsequences: false)
                        .map { FileTree.shown(Array($0)) }.joined(separator: "/")
                    _ = try db.run("UPDATE scan_directories SET mtime_ns = ? WHERE path = ?", [.integer(mark), .text(shown)])
                }
            }
        }
    }

    /// The store's own files and folder (the database, its SQLite sidecars, the agent's lock file,
    /// the alias folder), absolute: what a scan never counts as photos, and a watcher ignores.
    public var ownPaths: Set<String> { ownFiles }

    /// When the library was last scanned and last walked in full, and the token that scan
    /// recorded; all nil before the first scan.
    public func scanState() throws(StoreError) -> ScanState {
        try withDatabase { (db) throws(StoreError) -> ScanState in
            var values: [String: String] = [:]
            for row in try db.query("SELECT key, value FROM meta WHERE key IN ('folder_token', 'last_scan_at', 'last_full_walk_at')") {
                if let key = row[0].string, let value = row[1].string { values[key] = value }
            }
            func date(_ key: String) -> Date? { values[key].flatMap(Double.init).map(Date.init(timeIntervalSince1970:)) }
            return ScanState(token: values["folder_token"].flatMap(ChangeToken.init), scannedAt: date("last_scan_at"),
                             fullWalkAt: date("last_full_walk_at"))
        }
    }

    /// The entries the latest scan left out and why, by path, those the filter lets through: names
    /// that are not UTF-8, unreadable folders, links leading out of the library, FIFOs and other
    /// non-files (see `StatusCounts.skipped`); empty before the first scan.
    /// What the last scan left out of the library, with why (unreadable, not a regular file, a
    /// name that cannot be told apart), within the store's path filter, by path.
    public func skippedEntries() throws(StoreError) -> [ScanProblem] {
        try withDatabase { (db) throws(StoreError) -> [ScanProblem] in
            try db.query("SELECT path, message FROM scan_problems WHERE \(filter.sql("path")) ORDER BY path").map {
                ScanProblem(path: $0[0].string ?? "", message: $0[1].string ?? "")
            }
        }
    }

    /// The token for "now": changes recorded after it are news.
    public func currentToken() throws(StoreError) -> ChangeToken {
        try withDatabase { (db) throws(StoreError) in ChangeToken(sequence: try Self.currentSequence(db)) }
    }

    /// What was added, modified or removed after `token`, folded per path (a photo added then
    /// modified is just added). Throws `tokenExpired` when the history no longer reaches back to
    /// `token`: drop it, rescan, and start again from the scan's token.
    public func changes(since token: ChangeToken) throws(StoreError) -> ChangeSet {
        try withDatabase { (db) throws(StoreError) -> ChangeSet in
            let end = try Self.currentSequence(db)
            guard token.sequence <= end else {
                throw StoreError(.tokenExpired, "\(token) is from another store or a newer history; rescan")
            }
            if token.sequence < end {
                let oldest = try db.query("SELECT MIN(seq) FROM changes").first?.first?.int.map(Int64.init) ?? end + 1
                if token.sequence < oldest - 1 {
                    throw StoreError(.tokenExpired, "\(token) is older than the kept history (from ct-\(oldest - 1)); rescan")
                }
            }
            var first: [String: String] = [:]
            var last: [String: String] = [:]
            var order: [String] = []
            for row in try db.query("SELECT path, kind FROM changes WHERE seq > ? ORDER BY seq", [.integer(token.sequence)]) {
                guard let path = row[0].string, let kind = row[1].string else { continue }
                if first[path] == nil { first[path] = kind; order.append(path) }
                last[path] = kind
            }
            var set = ChangeSet(token: ChangeToken(sequence: end))
            for path in order {
                switch (first[path], last[path]) {
                case ("added", "removed"): continue                  // came and went
                case ("added", _): set.added.append(path)
                case (_, "removed"): set.removed.append(path)
                default: set.modified.append(path)                   // modified, or removed then re-added
                }
            }
            return set
        }
    }

    private static func currentSequence(_ db: Database) throws(StoreError) -> Int64 {
        // sqlite_sequence keeps the AUTOINCREMENT high-water mark even after old rows are pruned.
        Int64(try db.query("SELECT seq FROM sqlite_sequence WHERE name = 'changes'").first?.first?.int ?? 0)
    }
}
