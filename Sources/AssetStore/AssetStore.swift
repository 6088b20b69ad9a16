import UploadProtocol
import Foundation
import Synchronization

/// The durable record of one photo library: one row per photo, its verdict, its upload state and
/// the history of changes to the folder, in one SQLite database (WAL, busy timeout, every state
/// change in a transaction).
///
/// Several processes may open the same store: analysis work is claimed with a lease (owner process
/// and expiry) and results are written with conditional updates, so no photo is analysed twice and
/// a late result for a file that has since changed is dropped.
public final class AssetStore: Sendable {
    /// The database file.
    public let path: String
    /// The library folder, canonical and absolute.
    public let root: String
    /// How many change records are kept; older tokens throw `tokenExpired`.
    public let historyLimit: Int
    /// The rows this store object works on and reports: claims, counts and listings see only the
    /// rows it lets through. Scans are unaffected (every file keeps its row).
    public let filter: PathFilter

    private let database: Mutex<Database>
    /// The database, its SQLite sidecars and the agent's lock file, canonical: a scan never counts
    /// them as photos when the store lives inside the library.
    let ownFiles: Set<String>
    /// Where `absolutePath(of:)` makes its aliases for files whose names are not UTF-8: a hidden
    /// folder beside the database (`.<name>.names/`), which a scan skips like every hidden entry.
    let aliasDirectory: String
    /// Identifies this store object's analysis claims: `pid:nonce`.
    let leaseOwner: String

    /// Opens (creating and migrating as needed) the store for the library at `root`. With no
    /// `path`, the store lives under `$XDG_STATE_HOME/photodrain/` (or `~/.local/state/photodrain/`).
    /// `filter` narrows what this object claims, counts and lists (see `PathFilter`).
    ///
    /// With `readOnly`, opens an existing store for reading only (`status`, `verdicts`): nothing
    /// is migrated or written, so a store on a read-only disk, or owned by another user, can be
    /// read (a store that does not exist yet, or has an older schema, is opened as usual: created or
    /// migrated). Throws `newerSchema`, `wrongLibrary`, and `corrupted` for a damaged file.
    public init(root: String, path: String? = nil, historyLimit: Int = 100_000, filter: PathFilter = .all,
                readOnly: Bool = false) throws(StoreError) {
        guard let canonical = FileTree.realPath(root) else {
            throw StoreError(.unreadableRoot, "\(root): no such folder")
        }
        let storePath: String
        if let path { storePath = path } else { storePath = try Self.defaultPath(forRoot: canonical) }
        let slash = storePath.lastIndex(of: "/")
        let folder = slash.map { String(storePath[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        let name = slash.map { String(storePath[storePath.index(after: $0)...]) } ?? storePath
        let base = (FileTree.realPath(folder) ?? folder) + "/" + name
        self.aliasDirectory = (FileTree.realPath(folder) ?? folder) + "/." + name + ".names"
        // The alias folder is hidden, but a store that includes hidden files must still skip it.
        // The trashes `free-space` may keep at the library's top are never the library's photos
        // (issue 33): a store that includes hidden files skips them too.
        self.ownFiles = Set([base, base + "-wal", base + "-shm", base + "-journal", base + ".agent", aliasDirectory])
            .union(Self.trashFolders(root: canonical))
        self.filter = filter
        if readOnly && FileTree.exists(storePath), let db = try Self.openForReading(storePath) {
            let existing = try db.query("SELECT value FROM meta WHERE key = 'root'").first?.first?.string
            guard existing == nil || existing == canonical else {
                throw StoreError(.wrongLibrary, "\(storePath) belongs to \(existing ?? "?"), not \(canonical); pass --store to use another store")
            }
            self.path = storePath
            self.root = canonical
            self.historyLimit = max(historyLimit, 1)
            self.database = Mutex(db)
            self.leaseOwner = "\(FileTree.processID):\(UInt64.random(in: 1...UInt64.max))"
            return
        }
        let db = try Database(path: storePath)
        try Schema.migrate(db)
        try db.transaction { () throws(StoreError) in
            if let existing = try db.query("SELECT value FROM meta WHERE key = 'root'").first?.first?.string {
                guard existing == canonical else {
                    throw StoreError(.wrongLibrary, "\(storePath) belongs to \(existing), not \(canonical); pass --store to use another store")
                }
            } else {
                try db.run("INSERT INTO meta(key, value) VALUES ('root', ?)", [.text(canonical)])
            }
        }
        self.path = storePath
        self.root = canonical
        self.historyLimit = max(historyLimit, 1)
        self.database = Mutex(db)
        self.leaseOwner = "\(FileTree.processID):\(UInt64.random(in: 1...UInt64.max))"
    }

    /// The default store location for a library folder given by any path to it (relative, with
    /// `.` or links): `defaultPath(forRoot:)` of its canonical path. Throws `unreadableRoot` when
    /// the folder does not exist.
    public static func defaultPath(forFolder folder: String) throws(StoreError) -> String {
        guard let canonical = FileTree.realPath(folder) else {
            throw StoreError(.unreadableRoot, "\(folder): no such folder")
        }
        return try defaultPath(forRoot: canonical)
    }

    /// The store at `path` opened for reading only, or nil when its schema is older than this
    /// PhotoDrain's (only a writer can migrate it). Throws as `init`.
    private static func openForReading(_ path: String) throws(StoreError) -> Database? {
        let db = try Database(path: path, readOnly: true)
        switch try Schema.version(of: db) {
        case let version where version > Schema.currentVersion:
            throw StoreError(.newerSchema, "\(path) has schema version \(version); this PhotoDrain knows up to \(Schema.currentVersion). Upgrade PhotoDrain.")
        case Schema.currentVersion:
            return db
        default:
            return nil
        }
    }

    /// The default store location for a library folder: one database per library, named after the
    /// folder and a hash of its path.
    public static func defaultPath(forRoot root: String) throws(StoreError) -> String {
        let base: String
        if let state = FileTree.environment("XDG_STATE_HOME"), state.hasPrefix("/") {
            base = state + "/photodrain"
        } else if let home = FileTree.environment("HOME"), !home.isEmpty {
            base = home + "/.local/state/photodrain"
        } else {
            throw StoreError(.cannotOpen, "neither XDG_STATE_HOME nor HOME is set; pass --store PATH")
        }
        try FileTree.makeDirectories(base)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in root.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let name = root.split(separator: "/").last.map(String.init) ?? "root"
        let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
        return "\(base)/\(safe)-\(String(hash, radix: 16)).sqlite"
    }

    /// The trash folders `free-space` may make at the top of a library whose canonical path is
    /// `root`: its own `.photodrain-trash`, and the freedesktop.org `.Trash-$UID` when the library
    /// is the top of its filesystem. Never scanned.
    public static func trashFolders(root: String) -> Set<String> {
        [root + "/.photodrain-trash", root + "/.Trash-\(FileTree.userID())"]
    }

    /// The absolute path of a photo whose relative path is valid UTF-8.
    public func absolutePath(of relative: String) -> String { root + "/" + relative }

    /// A path that opens the photo's file. For a name that is valid UTF-8 that is its absolute
    /// path. A name that is not cannot be a Swift `String`, which the decoders and the upload
    /// client take: the store then makes a symbolic link to the file's real bytes,
    /// `<aliasDirectory>/<row id>`, and returns that (opening or `stat`ing it reaches the file,
    /// following renames of nothing but the file itself). If the link cannot be made, the shown
    /// path is returned, and opening it fails with the file's name in the error.
    public func absolutePath(of asset: AssetRecord) -> String {
        openablePath(id: asset.id, path: asset.path, rawPath: asset.rawPath)
    }

    /// `absolutePath(of:)` for the row `id`, whose path is `path` as shown and `rawPath` as bytes.
    func openablePath(id: Int64, path: String, rawPath: [UInt8]?) -> String {
        guard let raw = rawPath else { return absolutePath(of: path) }
        let alias = aliasDirectory + "/\(id)"
        guard (try? FileTree.makeDirectories(aliasDirectory)) != nil,
              FileTree.makeAlias(alias, to: Array(root.utf8) + [0x2F] + raw) else { return absolutePath(of: path) }
        return alias
    }

    /// True when the photo's file on disk is still the version its row describes: the same size
    /// and modification time, and the same stamp (status-change time, inode, device) when the row
    /// has one recorded for this version. What was analysed is what would be sent; a file
    /// rewritten with its time set back, or only chmod'ed, does not match until a scan has hashed
    /// it again (and, the bytes unchanged, recorded its new stamp).
    public func fileMatches(_ asset: AssetRecord) -> Bool {
        guard let state = FileTree.fileState(bytes: Array(root.utf8) + [0x2F] + asset.libraryPath),
              state.size == asset.size && state.mtimeNanoseconds == asset.mtimeNanoseconds else { return false }
        let recorded = try? withDatabase { (db) throws(StoreError) -> FileStamp? in
            try db.query("SELECT ctime_ns, inode, device FROM assets WHERE id = ? AND generation = ?",
                         [.integer(asset.id), .integer(Int64(asset.generation))]).first.flatMap { FileStamp(ctime: $0[0], inode: $0[1], device: $0[2]) }
        }
        guard let recorded = recorded ?? nil else { return true }
        return recorded == state.stamp
    }

    func withDatabase<T: Sendable>(_ body: (Database) throws(StoreError) -> T) throws(StoreError) -> T {
        try database.withLock { (db: inout Database) throws(StoreError) -> T in try body(db) }
    }

    // MARK: Scanning and change tracking

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
                var known: [String: (id: Int64, size: Int, mtime: Int64, stamp: FileStamp?, sha256: String?)] = [:]
                var standing = 0
                try db.forEach("SELECT id, path, size, mtime_ns, ctime_ns, inode, device, sha256 FROM assets") { row in
                    let path = row[1].string ?? ""
                    if !unread.isEmpty && unread.contains(FolderRecord.parent(of: path)) {
                        standing += 1
                        return
                    }
                    known[path] = (Int64(row[0].int ?? 0), row[2].int ?? 0, Int64(row[3].int ?? 0),
                                   FileStamp(ctime: row[4], inode: row[5], device: row[6]), row[7].string)
                }
                let start = try Self.currentSequence(db)
                var changes = ChangeSet(token: ChangeToken(sequence: start))
                let insert = try db.prepare("""
                    INSERT INTO assets(path, size, mtime_ns, discovered_at, raw_path, ctime_ns, inode, device) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """)
                let record = try db.prepare("INSERT INTO changes(path, kind, at) VALUES (?, ?, ?)")
                let restamp = try db.prepare("UPDATE assets SET ctime_ns = ?, inode = ?, device = ? WHERE id = ?")
                var settling: [String] = [], settlingNew = 0
                // Folders holding a file whose stamp changed that this scan could not hash.
                var unhashed: Set<String> = []
                for file in files {
                    if let row = known.removeValue(forKey: file.path) {
                        if row.size == file.size && row.mtime == file.mtimeNanoseconds {
                            // Same size and time: the same bytes unless the stamp says otherwise.
                            if let stamp = row.stamp, stamp == file.stamp { continue }
                            let sameBytes: Bool?
                            if row.stamp == nil {
                                sameBytes = true    // a row from before stamps were kept: recorded, not hashed
                            } else if let banked = row.sha256 {
                                switch digests[file.path] {
                                case .digest(let digest)?: sameBytes = digest == banked
                                case .unreadable?: sameBytes = false
                                case nil: sameBytes = nil
                                }
                            } else {
                                sameBytes = false   // no digest banked to compare with: it is new work anyway
                            }
                            if sameBytes == nil {
                                unhashed.insert(FolderRecord.parent(of: file.path))
                                continue
                            }
                            if sameBytes == true {
                                try restamp.bind(file.stamp.values + [.integer(row.id)])
                                while try restamp.step() {}
                                continue
                            }
                        }
                        if stillChanging(file) {
                            settling.append(file.path)
                            continue
                        }
                        try db.run("""
                            UPDATE assets SET size = ?, mtime_ns = ?, ctime_ns = ?, inode = ?, device = ?, generation = generation + 1, sha256 = NULL,
                              format = NULL, width = NULL, height = NULL, capture_date = NULL, verdict = NULL, label = NULL,
                              face_count = NULL, score = NULL, analysis_error = NULL, analyzed_at = NULL,
                              last_attempt_at = NULL, uploaded_at = NULL, attempts = 0, last_error = NULL,
                              server_id = NULL, upload_proof = NULL, failed = 0, lease_owner = NULL, lease_until = NULL
                            WHERE id = ?
                            """, [.integer(Int64(file.size)), .integer(file.mtimeNanoseconds)] + file.stamp.values + [.integer(row.id)])
                        changes.modified.append(file.path)
                        try record.bind([.text(file.path), .text("modified"), .real(now)])
                    } else {
                        if stillChanging(file) {
                            settling.append(file.path)
                            settlingNew += 1
                            continue
                        }
                        try insert.bind([.text(file.path), .integer(Int64(file.size)), .integer(file.mtimeNanoseconds), .real(now),
                                         file.rawPath.map { .text(Hex.string($0)) } ?? .null] + file.stamp.values)
                        while try insert.step() {}
                        changes.added.append(file.path)
                        try record.bind([.text(file.path), .text("added"), .real(now)])
                    }
                    while try record.step() {}
                }
                // Rows in folders this scan did not read stand; the rest that it did not find are gone.
                for (path, row) in known.sorted(by: { $0.key < $1.key }) {
                    try db.run("DELETE FROM assets WHERE id = ?", [.integer(row.id)])
                    changes.removed.append(path)
                    try record.bind([.text(path), .text("removed"), .real(now)])
                    while try record.step() {}
                }
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
                try FolderRecord.save(walk, started: started, untrusted: Set(settling.map(FolderRecord.parent(of:))).union(unhashed), db)
                var state: [(String, String)] = [("folder_token", changes.token.description), ("last_scan_at", String(started))]
                if folders == nil { state.append(("last_full_walk_at", String(started))) }
                for (key, value) in state {
                    try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(key), .text(value)])
                }
                return ScanReport(changes: changes, photoCount: files.count - settlingNew + standing, problems: problems, directoriesRead: walk.directoriesRead,
                                  directoriesUnchanged: walk.directories.count - walk.directoriesRead, fullWalk: folders == nil,
                                  settling: settling)
            }
        }
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
