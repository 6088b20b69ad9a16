/// What the destination showed about the bytes it holds once an upload finished.
public enum ReceiptProof: String, Sendable, Codable, Equatable {
    /// The destination showed it holds exactly these bytes: their SHA-256 (and length) as it
    /// stored them matched the file's (resumable: `Repr-Digest` of the final answer, of the upload
    /// resource or of the by-digest lookup; S3: the object's `x-amz-meta-sha256` and length).
    case verified
    /// The destination accepted the upload without such proof (a plain upload to a server that
    /// does not speak the resumable protocol, allowed only with `acceptUnverified`).
    case unverified
}
