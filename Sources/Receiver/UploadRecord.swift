import Foundation

/// The durable state of one resumable upload resource, kept as `uploads/<id>.json` beside the
/// partial bytes in `uploads/<id>.part`.
///
/// The record is not the offset's source of truth while bytes stream in: the partial file is.
/// Every byte in it was written in order from the client's body, so its length is the offset the
/// receiver reports, and those bytes survive a kill of the receiver process (they are in the page
/// cache). Only a crash of the machine can lose bytes that were never fsync'd; `durableOffset`
/// and `bootID` let a restart tell the two apart (see `UploadStore.init`).
struct UploadRecord: Codable, Sendable, Equatable {
    /// Server-generated: 32 lowercase hex digits.
    var id: String
    /// The interop version of the creation request (3...8).
    var interopVersion: Int
    /// Bytes of the partial file known to be on stable storage (fsync'd before this was written):
    /// what survives even a machine crash. The partial file may hold more.
    var durableOffset: Int64
    /// The announced total length (`Upload-Length`, or the size of a completing request), if known.
    var length: Int64?
    /// True once the last byte arrived and the object was stored. The completing request leaves
    /// it false (see `reservedObjectID`): `ExpirySweeper` writes it true at its next pass.
    var complete: Bool
    /// The stored object, once complete.
    var objectID: String?
    /// The id the object gets when this upload completes and is not a duplicate, chosen at
    /// creation. Completing stores the object under it and leaves the record as it is: a record
    /// whose reserved object has a sidecar is complete (`UploadStore` settles it when read).
    /// Rewriting the record would replace its file, and on ext4 every file deleted in the last
    /// seconds makes each new file's inode allocation slower (measured in BENCHMARKS.md); so the
    /// background `ExpirySweeper` rewrites it as complete later, off the requests' path.
    var reservedObjectID: String?
    var createdAt: Date
    /// The last time bytes arrived or the record changed; expiry counts from here.
    var updatedAt: Date
    /// What the upload will be stored with, from the creation request (or a later append).
    var metadata: ObjectMetadata
    /// When `durableOffset` was last fsync'd and recorded (nil: not since creation). The next
    /// checkpoint is due `checkpointInterval` after it, whichever append the bytes come in.
    var checkpointedAt: Date?
    /// The kernel boot (`/proc/sys/kernel/random/boot_id`) during which bytes past
    /// `durableOffset` may have been written; nil when unknown. While the machine has not
    /// rebooted, the page cache still holds them.
    var bootID: String?

    /// `durableOffset` keeps the key `offset` that records written before it existed use.
    private enum CodingKeys: String, CodingKey {
        case id, interopVersion, durableOffset = "offset", length, complete, objectID, reservedObjectID, createdAt, updatedAt,
             metadata, checkpointedAt, bootID
    }
}
