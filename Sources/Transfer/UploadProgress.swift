/// How far an upload has got, counted only from offsets the server acknowledged.
public struct UploadProgress: Sendable, Equatable {
    /// Bytes the server confirmed holding.
    public var acknowledgedBytes: Int64
    /// The file's size.
    public var totalBytes: Int64

    /// Creates a progress report.
    public init(acknowledgedBytes: Int64, totalBytes: Int64) {
        self.acknowledgedBytes = acknowledgedBytes
        self.totalBytes = totalBytes
    }
}
