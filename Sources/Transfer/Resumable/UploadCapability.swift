import UploadProtocol

/// What discovery found out about a destination.
public enum UploadCapability: Sendable, Equatable {
    /// The server speaks the resumable protocol, with these limits.
    case resumable(UploadLimits)
    /// The server does not (501, or no valid `Upload-Limit`): upload the whole file in one request.
    case plain
}
