import Foundation
import SystemSupport

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
    /// Which file the receiver hashed, and which version of it: taken when the bytes were
    /// placed (or last hashed again and found intact). A file whose stamp differs now is hashed
    /// again before the object answers for an upload; nil in sidecars written before stamps were
    /// kept, which counts as differing. See `UploadStore+Integrity.swift`.
    public var contentStamp: ContentStamp?
    /// The name of the device whose token sent the object (`serve tokens add`), never the token;
    /// nil when it came with `--token-file`'s token or to a receiver without tokens.
    public var device: String?
    /// The account whose space holds the object: in `GET /objects` and `GET /objects/<id>`
    /// answers to a device token (an admin's listing spans every account), never in a sidecar.
    public var account: String?
    /// Only in a sidecar under `quarantine/`: why and when the object was moved aside.
    public var quarantine: Quarantine?

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

/// What tells one version of a stored file from another (`ReadOnlyFile.Stamp`, kept in the
/// sidecar): a rewrite in place changes the change time even when it restores the size and the
/// modification time, and a file put back from elsewhere has another inode.
public struct ContentStamp: Codable, Sendable, Equatable {
    /// `st_dev` of the file system holding the file.
    public var device: UInt64
    /// `st_ino`.
    public var inode: UInt64
    /// Size in bytes.
    public var size: Int64
    /// Modification time, nanoseconds since the epoch.
    public var modifiedNanoseconds: Int64
    /// Status-change time, nanoseconds since the epoch.
    public var changedNanoseconds: Int64

    /// The stamp of `ReadOnlyFile.stamp()`.
    public init(_ stamp: ReadOnlyFile.Stamp) {
        device = stamp.device
        inode = stamp.inode
        size = stamp.size
        modifiedNanoseconds = stamp.modifiedNanoseconds
        changedNanoseconds = stamp.changedNanoseconds
    }
}

/// Why an object was moved to `quarantine/`, kept in its sidecar there.
public struct Quarantine: Codable, Sendable, Equatable {
    /// When it was moved aside.
    public var at: Date
    /// What was found ("its bytes hash to ...", "it is N bytes, not M").
    public var reason: String
    /// Where its bytes were, relative to the receiver's directory (`objects/<id>` or
    /// `files/<library path>`, percent-encoded as `storedPath`).
    public var from: String

    public init(at: Date, reason: String, from: String) {
        self.at = at
        self.reason = reason
        self.from = from
    }
}
