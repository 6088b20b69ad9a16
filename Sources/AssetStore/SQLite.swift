import CSQLite
import Glibc

// Every call into SQLite goes through this file: `Database` owns a connection and `Statement` a
// prepared statement; both are freed in deinit. Neither is thread-safe: `AssetStore` serialises
// access to its connection.

/// A value SQLite can bind or return.
enum SQLValue: Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    /// Bytes (a face's embedding).
    case blob([UInt8])
}

/// An open SQLite connection.
final class Database {
    private(set) var handle: OpaquePointer?
    let path: String

    /// Opens (creating if needed) the database at `path` in WAL mode with a busy timeout. With
    /// `readOnly`, opens an existing database for reading only and changes nothing (no journal
    /// mode, no file created): a store on a read-only disk or owned by someone else can still be
    /// read. When SQLite cannot read it that way (a WAL store whose folder does not let it create
    /// the shared-memory file), it is opened as immutable, a snapshot without locking.
    init(path: String, busyTimeoutMilliseconds: Int32 = 10_000, readOnly: Bool = false) throws(StoreError) {
        self.path = path
        if readOnly {
            let db = try Self.open(path, flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX)
            handle = db
            sqlite3_extended_result_codes(db, 1)
            sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
            do throws(StoreError) {
                _ = try query("SELECT COUNT(*) FROM sqlite_master")
            } catch where [SQLITE_CANTOPEN, SQLITE_READONLY].contains((error.resultCode ?? 0) & 0xff) {
                sqlite3_close_v2(db)
                handle = nil
                let uri = "file:" + Self.uriEscaped(path) + "?immutable=1"
                let immutable = try Self.open(uri, flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, shownAs: path)
                handle = immutable
                sqlite3_extended_result_codes(immutable, 1)
                _ = try query("SELECT COUNT(*) FROM sqlite_master")
            }
            try registerFnmatch()  // a filtered status or verdicts reads through it too
            return
        }
        let db = try Self.open(path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX)
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        // Two runners creating one store at once: the switch to WAL needs the file to itself, and
        // SQLite answers "locked" at once rather than through the busy handler. Wait it out.
        var attempts = 0
        while true {
            do throws(StoreError) {
                try execute("PRAGMA journal_mode = WAL")
                break
            } catch where [SQLITE_BUSY, SQLITE_LOCKED].contains((error.resultCode ?? 0) & 0xff) && attempts < 200 {
                attempts += 1
                usleep(50_000)
            }
        }
        try execute("PRAGMA synchronous = NORMAL")
        try execute("PRAGMA foreign_keys = ON")
        try registerFnmatch()
    }

    /// Registers `pd_fnmatch(pattern, text)`: 1 when `text` matches the glob `pattern` by
    /// fnmatch(3) with no flags, 0 when not, NULL when either is NULL. `PathFilter` builds on it.
    private func registerFnmatch() throws(StoreError) {
        let rc = sqlite3_create_function_v2(handle, "pd_fnmatch", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, { context, count, values in
            guard count == 2, let values, let pattern = sqlite3_value_text(values[0]), let text = sqlite3_value_text(values[1]) else {
                sqlite3_result_null(context)
                return
            }
            let matched = FileTree.matches(pattern: String(cString: pattern), path: String(cString: text))
            sqlite3_result_int(context, matched ? 1 : 0)
        }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql: nil) }
    }

    private static func open(_ name: String, flags: Int32, shownAs shown: String? = nil) throws(StoreError) -> OpaquePointer {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(name, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw StoreError(.cannotOpen, "\(shown ?? name): \(message)", resultCode: rc)
        }
        return db
    }

    /// `path` with the characters a `file:` URI gives meaning to percent-encoded.
    private static func uriEscaped(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x20, 0x7F...:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            default:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return out
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(StoreError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw StoreError(sqlite: rc, message: text, path: path, sql: sql)
        }
    }

    /// Prepares a statement.
    func prepare(_ sql: String) throws(StoreError) -> Statement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, sql: sql) }
        return Statement(stmt, database: self, sql: sql)
    }

    /// Runs `sql` with `arguments` and returns every row.
    @discardableResult
    func query(_ sql: String, _ arguments: [SQLValue] = []) throws(StoreError) -> [[SQLValue]] {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        var rows: [[SQLValue]] = []
        while try statement.step() { rows.append(statement.row()) }
        return rows
    }

    /// Runs `sql` with `arguments`, handing each row to `body` as it is read: for queries over the
    /// whole library, whose rows must not all be held at once.
    func forEach(_ sql: String, _ arguments: [SQLValue] = [], _ body: ([SQLValue]) throws(StoreError) -> Void) throws(StoreError) {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        while try statement.step() { try body(statement.row()) }
    }

    /// Runs a statement and returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ arguments: [SQLValue] = []) throws(StoreError) -> Int {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        while try statement.step() {}
        return Int(sqlite3_changes(handle))
    }

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back if it throws. IMMEDIATE takes the
    /// write lock up front, so two processes never both read-then-write the same rows.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    func error(_ rc: Int32, sql: String?) -> StoreError {
        StoreError(sqlite: rc, message: String(cString: sqlite3_errmsg(handle)), path: path, sql: sql)
    }
}

/// A prepared statement.
final class Statement {
    private let handle: OpaquePointer
    private let database: Database
    let sql: String

    init(_ handle: OpaquePointer, database: Database, sql: String) {
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func bind(_ values: [SQLValue]) throws(StoreError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let n): rc = sqlite3_bind_int64(handle, index, n)
            case .real(let d): rc = sqlite3_bind_double(handle, index, d)
            case .text(let s): rc = pd_sqlite3_bind_text_transient(handle, index, s, -1)
            case .blob(let bytes): rc = bytes.withUnsafeBytes { pd_sqlite3_bind_blob_transient(handle, index, $0.baseAddress, Int32($0.count)) }
            }
            guard rc == SQLITE_OK else { throw database.error(rc, sql: sql) }
        }
    }

    /// Advances to the next row; false when done.
    func step() throws(StoreError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error(rc, sql: sql)
        }
    }

    /// The current row's values.
    func row() -> [SQLValue] {
        (0..<sqlite3_column_count(handle)).map { column in
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
            case SQLITE_TEXT:
                guard let text = sqlite3_column_text(handle, column) else { return .null }
                return .text(String(cString: text))
            case SQLITE_BLOB:
                let count = Int(sqlite3_column_bytes(handle, column))
                guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return .blob([]) }
                return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
            default: return .null
            }
        }
    }
}

extension SQLValue {
    var int: Int? { if case .integer(let n) = self { return Int(n) } else { return nil } }
    var double: Double? {
        switch self {
        case .real(let d): d
        case .integer(let n): Double(n)
        default: nil
        }
    }
    var string: String? { if case .text(let s) = self { return s } else { return nil } }
    var bytes: [UInt8]? { if case .blob(let b) = self { return b } else { return nil } }

    init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    init(_ value: Double?) { self = value.map { .real($0) } ?? .null }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
