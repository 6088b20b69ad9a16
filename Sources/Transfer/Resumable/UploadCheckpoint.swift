import Foundation

/// Where an upload stands, saved so another process can resume it.
///
/// For a resumable HTTP upload: the upload resource's URL, the offset the server last
/// acknowledged, and the interop version it was created with. For an S3 multipart upload:
/// `location` is the object (`s3://BUCKET/KEY`), `uploadID` the multipart upload id, `partSize`
/// the size every part but the last was cut to, `parts` the parts S3 acknowledged with their
/// ETags, and `offset` the bytes those parts hold.
///
/// A job row keeps it in `resume_url` + `confirmed_offset` (see `storedForm`): a resumable
/// checkpoint as its bare URL (as before), a multipart one as compact JSON of this struct.
public struct UploadCheckpoint: Sendable, Equatable, Codable {
    /// The absolute URL of the upload resource (the server's `Location`), or the S3 object's `s3://` URI.
    public var location: String
    /// Bytes the server has acknowledged.
    public var offset: Int64
    /// The interop version the resource was created with (0 for S3).
    public var interopVersion: Int
    /// The S3 multipart upload id; nil for a resumable HTTP upload.
    public var uploadID: String?
    /// The size of every S3 part but the last.
    public var partSize: Int64?
    /// The S3 parts acknowledged so far, in ascending part number.
    public var parts: [S3Part]?
    /// The checksum algorithm the S3 multipart upload was created with (`SHA256`), so its parts
    /// are sent with the checksums it expects; nil for one created without (by an earlier version).
    public var checksumAlgorithm: String?

    /// Creates a checkpoint.
    public init(location: String, offset: Int64, interopVersion: Int, uploadID: String? = nil,
                partSize: Int64? = nil, parts: [S3Part]? = nil, checksumAlgorithm: String? = nil) {
        self.location = location
        self.offset = offset
        self.interopVersion = interopVersion
        self.uploadID = uploadID
        self.partSize = partSize
        self.parts = parts
        self.checksumAlgorithm = checksumAlgorithm
    }

    /// The text a job row keeps in `resume_url`: the bare location for a resumable upload, compact
    /// JSON (sorted keys, starting with `{`) for an S3 multipart upload.
    public var storedForm: String {
        guard uploadID != nil else { return location }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return location }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads a `storedForm` back: JSON when it starts with `{`, else a bare location with the given
    /// offset and interop version. Nil when JSON is malformed (the upload then starts over).
    public init?(storedForm: String, confirmedOffset: Int64, interopVersion: Int) {
        guard storedForm.hasPrefix("{") else {
            self.init(location: storedForm, offset: confirmedOffset, interopVersion: interopVersion)
            return
        }
        guard let decoded = try? JSONDecoder().decode(UploadCheckpoint.self, from: Data(storedForm.utf8)) else { return nil }
        self = decoded
    }
}
