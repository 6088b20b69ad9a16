import Foundation

/// The durable state of one resumable upload resource, kept as `uploads/<id>.json` beside the
/// partial bytes in `uploads/<id>.part`. `offset` is only ever written after the bytes before it
/// were fsync'd, so on disk it is always a promise the receiver can keep.
struct UploadRecord: Codable, Sendable, Equatable {
    /// Server-generated: 32 lowercase hex digits.
    var id: String
    /// The interop version of the creation request (3...8).
    var interopVersion: Int
    /// Bytes durably received.
    var offset: Int64
    /// The announced total length (`Upload-Length`, or the size of a completing request), if known.
    var length: Int64?
    /// True once the last byte arrived and the object was stored.
    var complete: Bool
    /// The stored object, once complete.
    var objectID: String?
    var createdAt: Date
    /// The last time bytes arrived or the record changed; expiry counts from here.
    var updatedAt: Date
    /// What the upload will be stored with, from the creation request (or a later append).
    var metadata: ObjectMetadata
}
