import Foundation

/// The state of one resumable upload in the bucket, `uploads/<id>.json`: the only thing an
/// instance knows about an upload, so any instance can answer for it.
///
/// The bytes received so far are the committed `parts` of the multipart upload (each at least
/// 5 MiB, S3's smallest part but the last) followed by `tail`, an object of its own holding the
/// bytes after them (a PATCH whose bytes stop short of a part's size). `offset` counts both, and
/// only what the record names: a part uploaded by an instance that was killed or superseded
/// before it committed the record is not counted, and CompleteMultipartUpload (which names the
/// record's parts) leaves it out.
///
/// Every change is a conditional write on the record's ETag (`If-Match`), so of two instances that
/// read one version only one can write the next. A request that streams bytes first *claims* the
/// record (writes itself as `writer`, with a block of part numbers of its own); an older request
/// still streaming on another instance then loses its next commit and stops, as the older
/// transfer of an upload does on one instance. Part numbers are never shared between claims, so
/// a superseded writer's late UploadPart cannot replace a part the record names.
struct S3UploadRecord: Codable, Sendable, Equatable {
    struct Part: Codable, Sendable, Equatable {
        var number: Int
        var etag: String
        var size: Int64
    }

    struct Tail: Codable, Sendable, Equatable {
        /// Relative to the store's prefix: `uploads/<id>.tail-<writer>-<n>` (never reused).
        var key: String
        var size: Int64
    }

    var id: String
    var interopVersion: Int
    /// The announced total length, if known.
    var length: Int64?
    var metadata: ObjectMetadata
    var createdAt: Date
    /// The last time bytes were committed or the record changed; expiry counts from here.
    var updatedAt: Date
    /// The multipart upload of `objects/<reservedObjectID>`, once a part was needed.
    var multipartID: String?
    var parts: [Part] = []
    var tail: Tail?
    /// The first part number no claim holds yet.
    var nextPartNumber: Int = 1
    /// The request that may write bytes now (a random token per claim).
    var writer: String?
    var complete: Bool = false
    /// The stored object, once complete (the reserved one, or the first copy of a duplicate).
    var objectID: String?
    /// Where the object goes: `objects/<reservedObjectID>`.
    var reservedObjectID: String

    /// Bytes the bucket holds for this upload.
    var offset: Int64 {
        parts.reduce(0) { $0 + $1.size } + (tail?.size ?? 0)
    }

    /// Part numbers one claim takes at a time (S3 allows 10,000 in all).
    static let partNumberBlock = 16
    static let maximumPartNumber = 10_000

    /// The record's key: `uploads/<id>.json`.
    static func key(_ id: String) -> String { "uploads/\(id).json" }
}
