/// Why a store operation failed: a stable code, a message a person can act on, and for SQLite
/// failures the result code and the statement.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The database could not be opened or created.
        case cannotOpen = "cannot-open"
        /// SQLite reported an error.
        case sqlite
        /// The database belongs to another library folder.
        case wrongLibrary = "wrong-library"
        /// The database was written by a newer PhotoDrain.
        case newerSchema = "newer-schema"
        /// A change token older than the kept history: drop it and rescan.
        case tokenExpired = "token-expired"
        /// The library folder cannot be read.
        case unreadableRoot = "unreadable-root"
        /// Creating or retrying an upload job would pass the inflight limit; acknowledge some first.
        case limitExceeded = "limit-exceeded"
        /// An argument the store cannot use.
        case invalidArgument = "invalid-argument"
        /// The database file is damaged, or is not a database at all.
        case corrupted
        /// A runner named another destination than the one the library's uploads went to, without
        /// saying that the library should go there too.
        case destinationChanged = "destination-changed"
        /// No person or face has the id given (`people`).
        case notFound = "not-found"
        /// Two people with faces in one photo cannot be one person (`people merge`).
        case cannotLink = "cannot-link"
    }

    public let code: Code
    public let message: String
    /// SQLite's (extended) result code, for `.sqlite`.
    public let resultCode: Int32?
    /// The statement that failed, for `.sqlite`.
    public let sql: String?

    public init(_ code: Code, _ message: String, resultCode: Int32? = nil, sql: String? = nil) {
        self.code = code
        self.message = message
        self.resultCode = resultCode
        self.sql = sql
    }

    /// An error for SQLite result code `rc` on the database at `path`: `corrupted` when SQLite
    /// says the file is damaged or not a database (with what to do about it), else `sqlite`.
    init(sqlite rc: Int32, message: String, path: String, sql: String?) {
        switch rc & 0xff {
        case 11, 26:  // SQLITE_CORRUPT, SQLITE_NOTADB
            self.init(.corrupted, "the store \(path) is damaged or is not a PhotoDrain store (\(message)); restore it from a backup, or move it aside and run again to rebuild it",
                      resultCode: rc, sql: sql)
        default:
            self.init(.sqlite, message, resultCode: rc, sql: sql)
        }
    }

    /// One line for people: the code, the message and the SQLite result code. The statement is
    /// kept in `sql` for debugging, never printed: it means nothing to the user and spans lines.
    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let resultCode { text += " (SQLite \(resultCode))" }
        return text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
