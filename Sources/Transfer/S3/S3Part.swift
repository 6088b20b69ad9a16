/// One part of an S3 multipart upload that S3 acknowledged: its number (1...10,000), the `ETag`
/// S3 returned for it (quotes included, as CompleteMultipartUpload wants it back) and its size.
public struct S3Part: Sendable, Equatable, Codable {
    /// The part number, 1...10,000.
    public var number: Int
    /// The part's ETag as S3 sent it, e.g. `"9b2cf535f27731c974343645a3985328"`.
    public var etag: String
    /// The part's size in bytes.
    public var size: Int64

    /// Creates a part record.
    public init(number: Int, etag: String, size: Int64) {
        self.number = number
        self.etag = etag
        self.size = size
    }
}
