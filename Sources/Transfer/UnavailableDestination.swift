/// A destination that could not be set up (an unknown scheme, an `s3://` URL without
/// credentials): every upload fails with the configuration error, which is permanent, so a job
/// naming it is recorded as failed with a reason a person can act on instead of being retried.
public struct UnavailableDestination: UploadDestination {
    /// The destination as named.
    public let endpoint: String
    /// Why it is unusable.
    public let error: TransferError

    /// Creates the stand-in for `endpoint`, failing every upload with `error`.
    public init(endpoint: String, error: TransferError) {
        self.endpoint = endpoint
        self.error = error
    }

    /// Throws the configuration error.
    public func upload(file path: String, metadata: UploadMetadata, resumeFrom: UploadCheckpoint?,
                       progress: @escaping (UploadProgress) -> Void,
                       checkpoint: @escaping (UploadCheckpoint) throws -> Void) async throws(TransferError) -> UploadReceipt {
        throw error
    }

    /// Throws the configuration error: nothing can be cancelled without a usable destination.
    public func cancel(_ checkpoint: UploadCheckpoint) async throws(TransferError) { throw error }

    /// Returns: a misconfigured destination is not "offline", so the runners try (and fail) the jobs.
    public func checkReachable() async throws(TransferError) {}

    /// The stored text as a bare location.
    public func checkpoint(restoring stored: String, confirmedOffset: Int64) -> UploadCheckpoint? {
        UploadCheckpoint(location: stored, offset: confirmedOffset, interopVersion: 0)
    }
}
