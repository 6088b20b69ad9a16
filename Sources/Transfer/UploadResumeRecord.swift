import Foundation

/// What `UploadResumeStore` keeps for one unfinished upload: which version of which file went
/// where, and the checkpoint to resume it from. Holds no token: the checkpoint is the upload URL
/// (without user info) or an S3 multipart upload's id and parts.
public struct UploadResumeRecord: Sendable, Equatable, Codable {
    /// The record layout's version; records of another are left alone.
    public static let currentFormat = 1

    /// `currentFormat` when written.
    public var format: Int
    /// The file as it was when its upload started.
    public var file: FileIdentity
    /// The destination (`UploadResumeStore.Destination.name`): no user info, query or fragment.
    public var destination: String
    /// The resumable-upload interop version the upload was created with (0 for S3).
    public var interopVersion: Int
    /// `UploadCheckpoint.storedForm`, user info taken out of the upload URL.
    public var checkpoint: String
    /// Bytes the server had acknowledged at the last checkpoint.
    public var confirmedOffset: Int64
    /// When the checkpoint was saved, seconds since the epoch.
    public var savedAt: Double

    /// Creates a record.
    public init(file: FileIdentity, destination: String, interopVersion: Int, checkpoint: String,
                confirmedOffset: Int64, savedAt: Date) {
        self.format = Self.currentFormat
        self.file = file
        self.destination = destination
        self.interopVersion = interopVersion
        self.checkpoint = checkpoint
        self.confirmedOffset = confirmedOffset
        self.savedAt = savedAt.timeIntervalSince1970
    }

    /// True when the record was saved more than `maximumAge` seconds before `now`.
    public func isExpired(maximumAge: TimeInterval, now: Date) -> Bool {
        now.timeIntervalSince1970 - savedAt > maximumAge
    }
}
