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
}
