/// Where a resumable upload stands, saved so another process can resume it: the upload
/// resource's URL, the offset the server last acknowledged, and the interop version it was
/// created with.
public struct UploadCheckpoint: Sendable, Equatable, Codable {
    /// The absolute URL of the upload resource (the server's `Location`).
    public var location: String
    /// Bytes the server has acknowledged.
    public var offset: Int64
    /// The interop version the resource was created with.
    public var interopVersion: Int

    /// Creates a checkpoint.
    public init(location: String, offset: Int64, interopVersion: Int) {
        self.location = location
        self.offset = offset
        self.interopVersion = interopVersion
    }
}
