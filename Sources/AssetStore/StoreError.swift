/// Why a store operation failed: a stable code, a message a person can act on, and for SQLite
/// failures the result code and the statement.
public struct StoreError: Error, Sendable, CustomStringConvertible {
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

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let resultCode { text += " (SQLite \(resultCode))" }
        if let sql { text += " in `\(sql)`" }
        return text
    }
}
