import Foundation
import UploadProtocol

/// Photos `free-space` took off the device (store migration 11, issue 33). Every removal is
/// written in two steps around the move on disk: an intent (`trashing` or `deleting`, with the
/// trash path chosen) committed before the file is renamed or unlinked, and the outcome
/// (`trashed`, `deleted`) after, in the same transaction that drops the file's row (its marks go
/// with it, so no scan or drain takes it for a library photo again). A run killed between the two
/// leaves an intent the next run settles by looking at the disk (`RemovalRecovery` in Drain).
extension AssetStore {
    /// One file's removal.
    public struct Removal: Sendable, Equatable, Codable {
        public enum State: String, Sendable, Codable {
            /// Intent: about to be renamed into the trash.
            case trashing
            /// In the trash (`trashPath`).
            case trashed
            /// Intent: about to be unlinked (`--delete`).
            case deleting
            /// Unlinked; its bytes are at the destination only.
            case deleted
            /// It was in the trash, which has been emptied of it: at the destination only.
            case purged
            /// Put back by `photodrain restore`.
            case restored
        }

        public var id: Int64
        public var path: String
        public var rawPath: [UInt8]?
        public var photo: String
        public var sha256: String
        public var size: Int64
        public var mtimeNanoseconds: Int64
        public var destination: String
        public var serverID: String?
        public var proof: String
        public var state: State
        public var trashPath: String?
        public var infoPath: String?
        public var startedAt: Double
        public var removedAt: Double?
        public var restoredAt: Double?

        /// The path's bytes, as the file system names the file.
        public var libraryPath: [UInt8] { rawPath ?? Array(path.utf8) }

        public init(id: Int64 = 0, path: String, rawPath: [UInt8]? = nil, photo: String, sha256: String, size: Int64,
                    mtimeNanoseconds: Int64, destination: String, serverID: String?, proof: String, state: State,
                    trashPath: String?, infoPath: String?, startedAt: Double, removedAt: Double? = nil, restoredAt: Double? = nil) {
            self.id = id
            self.path = path
            self.rawPath = rawPath
            self.photo = photo
            self.sha256 = sha256
            self.size = size
            self.mtimeNanoseconds = mtimeNanoseconds
            self.destination = destination
            self.serverID = serverID
            self.proof = proof
            self.state = state
            self.trashPath = trashPath
            self.infoPath = infoPath
            self.startedAt = startedAt
            self.removedAt = removedAt
            self.restoredAt = restoredAt
        }

        static let columns = """
            id, path, raw_path, photo, sha256, size, mtime_ns, destination, server_id, proof, state, trash_path, info_path, \
            started_at, removed_at, restored_at
            """

        init(row r: [SQLValue]) {
            id = Int64(r[0].int ?? 0)
            path = r[1].string ?? ""
            rawPath = r[2].string.flatMap(Hex.bytes(fromHex:))
            photo = r[3].string ?? ""
            sha256 = r[4].string ?? ""
            size = Int64(r[5].int ?? 0)
            mtimeNanoseconds = Int64(r[6].int ?? 0)
            destination = r[7].string ?? ""
            serverID = r[8].string
            proof = r[9].string ?? ""
            state = State(rawValue: r[10].string ?? "") ?? .trashing
            trashPath = r[11].string
            infoPath = r[12].string
            startedAt = r[13].double ?? 0
            removedAt = r[14].double
            restoredAt = r[15].double
        }
    }

    /// Records the intent to remove one file (`state` `.trashing` or `.deleting`), committed
    /// before the file moves; returns the removal's id.
    public func recordRemovalIntent(_ removal: Removal) throws(StoreError) -> Int64 {
        precondition(removal.state == .trashing || removal.state == .deleting)
        return try withDatabase { (db) throws(StoreError) -> Int64 in
            try db.transaction { () throws(StoreError) -> Int64 in
                try db.run("""
                    INSERT INTO removals(path, raw_path, photo, sha256, size, mtime_ns, destination, server_id, proof, state,
                      trash_path, info_path, started_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.text(removal.path), removal.rawPath.map { .text(Hex.string($0)) } ?? .null, .text(removal.photo),
                          .text(removal.sha256), .integer(removal.size), .integer(removal.mtimeNanoseconds),
                          .text(Self.destinationKey(removal.destination)), SQLValue(removal.serverID), .text(removal.proof),
                          .text(removal.state.rawValue), SQLValue(removal.trashPath), SQLValue(removal.infoPath),
                          .real(removal.startedAt)])
                return try db.query("SELECT last_insert_rowid()").first?.first?.int.map(Int64.init) ?? 0
            }
        }
    }

    /// Records that the file of intent `id` has left the library (renamed into the trash, or
    /// unlinked) and drops its row and marks, as a scan would on finding it gone.
    public func recordRemovalDone(_ id: Int64) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                guard let row = try db.query("SELECT \(Removal.columns) FROM removals WHERE id = ?", [.integer(id)]).first else { return }
                let removal = Removal(row: row)
                let done: Removal.State = removal.state == .deleting ? .deleted : .trashed
                let now = FileTree.now()
                try db.run("UPDATE removals SET state = ?, removed_at = ? WHERE id = ? AND state IN ('trashing', 'deleting')",
                           [.text(done.rawValue), .real(now), .integer(id)])
                if try db.query("SELECT id FROM assets WHERE path = ?", [.text(removal.path)]).first != nil {
                    try db.run("DELETE FROM assets WHERE path = ?", [.text(removal.path)])
                    try db.run("INSERT INTO changes(path, kind, at) VALUES (?, 'removed', ?)", [.text(removal.path), .real(now)])
                }
            }
        }
    }

    /// Forgets the intent `id`: the file never left (a failed rename, a file that changed, a run
    /// killed before the move).
    public func abandonRemoval(_ id: Int64) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            _ = try db.run("DELETE FROM removals WHERE id = ? AND state IN ('trashing', 'deleting')", [.integer(id)])
        }
    }

    /// Sets a removal's state (`purged` once the trash is emptied of it, `restored` once put back).
    public func recordRemovalState(_ id: Int64, _ state: Removal.State) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            let restoredAt: SQLValue = state == .restored ? .real(FileTree.now()) : .null
            _ = try db.run("UPDATE removals SET state = ?, restored_at = COALESCE(?, restored_at) WHERE id = ?",
                           [.text(state.rawValue), restoredAt, .integer(id)])
        }
    }

    /// Removals in any of `states` (every one when empty), oldest first.
    public func removals(in states: [Removal.State] = []) throws(StoreError) -> [Removal] {
        try withDatabase { (db) throws(StoreError) -> [Removal] in
            let condition = states.isEmpty ? "1" : "state IN (" + states.map { "'\($0.rawValue)'" }.joined(separator: ", ") + ")"
            return try db.query("SELECT \(Removal.columns) FROM removals WHERE \(condition) ORDER BY id").map(Removal.init(row:))
        }
    }
}

extension AssetStore {
    /// What `free-space` has freed, for `status` and `report`: the files in the trash now (their
    /// bytes still on the library's filesystem until it is emptied), those gone from the device
    /// (deleted, or emptied from the trash: at the destination only), and those restored.
    public struct RemovalSummary: Sendable, Equatable, Codable {
        public var inTrash = 0
        public var trashBytes: Int64 = 0
        /// When the oldest file in the trash was moved there (seconds since the epoch).
        public var oldestInTrash: Double?
        public var gone = 0
        public var goneBytes: Int64 = 0
        public var restored = 0
        /// Intents a killed run left, which the next `free-space` or `restore` settles.
        public var unsettled = 0

        public init() {}

        /// Bytes taken off the library: what the trash holds and what is gone.
        public var freedBytes: Int64 { trashBytes + goneBytes }
    }

    /// The removals, summed by where their files are now.
    public func removalSummary() throws(StoreError) -> RemovalSummary {
        try withDatabase { (db) throws(StoreError) -> RemovalSummary in
            var summary = RemovalSummary()
            let rows = try db.query("""
                SELECT state, COUNT(*), COALESCE(SUM(size), 0), MIN(COALESCE(removed_at, started_at)) FROM removals GROUP BY state
                """)
            for row in rows {
                let count = row[1].int ?? 0
                let bytes = Int64(row[2].int ?? 0)
                switch Removal.State(rawValue: row[0].string ?? "") {
                case .trashed:
                    summary.inTrash = count
                    summary.trashBytes = bytes
                    summary.oldestInTrash = row[3].double
                case .deleted, .purged:
                    summary.gone += count
                    summary.goneBytes += bytes
                case .restored:
                    summary.restored = count
                case .trashing, .deleting, nil:
                    summary.unsettled += count
                }
            }
            return summary
        }
    }
}
