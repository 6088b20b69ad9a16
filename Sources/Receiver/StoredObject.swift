import Foundation

/// One object the receiver stored, as kept in its JSON sidecar `objects/<id>.json` and as listed by
/// `GET /objects`.
public struct StoredObject: Codable, Sendable, Equatable {
    /// Server-generated id (32 lowercase hex digits), returned in `x-server-resource-id`.
    public var id: String
    /// Size in bytes.
    public var size: Int64
    /// Lowercase hex SHA-256 of the bytes, computed by the receiver.
    public var sha256: String
    /// The client's `Idempotency-Key`, if it sent one.
    public var idempotencyKey: String?
    /// The file name from `Content-Disposition`, if any.
    public var filename: String?
    /// The `X-Verdict` value as sent (compact JSON), if any.
    public var verdict: String?
    /// When the object was stored.
    public var storedAt: Date

    /// Makes a record (tests and tools decode these from the listing).
    public init(id: String, size: Int64, sha256: String, idempotencyKey: String?, filename: String?,
                verdict: String?, storedAt: Date) {
        self.id = id
        self.size = size
        self.sha256 = sha256
        self.idempotencyKey = idempotencyKey
        self.filename = filename
        self.verdict = verdict
        self.storedAt = storedAt
    }
}
