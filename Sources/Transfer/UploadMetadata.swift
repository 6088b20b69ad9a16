/// What travels with every upload besides the bytes: the file name, the content hash (the
/// idempotency key and the `Repr-Digest`) and the verdict as compact JSON.
public struct UploadMetadata: Sendable, Equatable {
    /// The name sent in `Content-Disposition`.
    public var filename: String
    /// The content SHA-256 as 64 hex digits (`FileDigest.sha256Hex(path:)`).
    public var sha256Hex: String
    /// The verdict as one line of compact JSON, sent in `X-Verdict`.
    public var verdictJSON: String

    /// Creates metadata.
    public init(filename: String, sha256Hex: String, verdictJSON: String) {
        self.filename = filename
        self.sha256Hex = sha256Hex
        self.verdictJSON = verdictJSON
    }

    /// Metadata for the file at `path`: its last path component as the name and its SHA-256
    /// computed now (streamed). Throws `TransferError` (`file-unreadable`) when it cannot be read.
    public init(file path: String, verdictJSON: String = "{}") throws(TransferError) {
        self.init(file: path, sha256Hex: try FileDigest.sha256Hex(path: path), verdictJSON: verdictJSON)
    }

    /// Metadata for the file at `path` whose SHA-256 is already known (from the asset store, or a
    /// `BackgroundDigest`): its last path component as the name.
    public init(file path: String, sha256Hex: String, verdictJSON: String = "{}") {
        self.init(filename: Self.filename(of: path), sha256Hex: sha256Hex, verdictJSON: verdictJSON)
    }

    /// The name sent for the file at `path`: its last path component.
    public static func filename(of path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
    }
}
