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
    /// The file name from `Content-Disposition`, if any (bytes that are not UTF-8 shown as U+FFFD).
    public var filename: String?
    /// The file name's exact bytes, percent-encoded, when they are not valid UTF-8.
    public var filenameEncoded: String?
    /// The `X-Verdict` value as sent (compact JSON), if any.
    public var verdict: String?
    /// When the object was stored.
    public var storedAt: Date
    /// Where the photo came from (library path, mtime, size, EXIF capture date), when the client
    /// sent `X-Photo-*` headers.
    public var provenance: ObjectProvenance?
    /// With `serve --layout path`: where the bytes are, relative to the receiver's directory
    /// (`files/<library path>`, a `~suffix` before the extension when that path was taken), its
    /// bytes percent-encoded as `ObjectProvenance.pathEncoded`. nil: at `objects/<id>`.
    public var storedPath: String?
    /// With `serve --layout path`: why the bytes are at `objects/<id>` after all (a name over 255
    /// bytes, a path over 64 folders deep, no usable `X-Photo-Path`); nil when they are where the
    /// layout says.
    public var layoutNote: String?

    /// Makes a record (tests and tools decode these from the listing).
    public init(id: String, size: Int64, sha256: String, idempotencyKey: String?, filename: String?,
                verdict: String?, storedAt: Date, filenameEncoded: String? = nil, provenance: ObjectProvenance? = nil,
                storedPath: String? = nil) {
        self.filenameEncoded = filenameEncoded
        self.provenance = provenance
        self.storedPath = storedPath
        self.id = id
        self.size = size
        self.sha256 = sha256
        self.idempotencyKey = idempotencyKey
        self.filename = filename
        self.verdict = verdict
        self.storedAt = storedAt
    }
}
