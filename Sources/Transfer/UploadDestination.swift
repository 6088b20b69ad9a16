/// Somewhere a photo can be uploaded to: a resumable-upload server (`ResumableUploader`) or an
/// S3 bucket (`S3Uploader`). The runners and the job performer work with `any UploadDestination`;
/// `UploadDestinations.make(for:settings:)` picks one by the destination URL's scheme.
public protocol UploadDestination: Sendable {
    /// The destination as the user named it (`--to`), recorded on upload jobs. Never holds a secret.
    var endpoint: String { get }

    /// Where the bytes go (`DestinationIdentity`): what uploads are recorded against. Two
    /// destinations with one identity are one place; the default is the identity of `endpoint`.
    var identity: DestinationIdentity { get }

    /// Uploads the file at `path`, tagged with `metadata`, and returns the server's acknowledgement.
    /// With `resumeFrom`, continues the saved upload when the server still has it. `checkpoint` is
    /// called before bytes are sent that could not otherwise be found again, and after every
    /// acknowledged step; persist it (`UploadCheckpoint.storedForm`) to resume in another process.
    /// Throws `TransferError`, classified transient, permanent or deferred (cancelled).
    func upload(file path: String, metadata: UploadMetadata, resumeFrom: UploadCheckpoint?,
                progress: @escaping (UploadProgress) -> Void,
                checkpoint: @escaping (UploadCheckpoint) throws -> Void) async throws(TransferError) -> UploadReceipt

    /// Abandons a saved, unfinished upload on the server so nothing is left behind. An upload the
    /// server no longer knows counts as cancelled. Throws `TransferError` for other failures.
    func cancel(_ checkpoint: UploadCheckpoint) async throws(TransferError)

    /// Asks the destination, over the network and now, for any answer at all, to tell "reachable"
    /// from "offline". Throws `TransferError`; an error without an HTTP answer (`connection-failed`,
    /// `host-not-found`, `connection-lost`, `timed-out`) means unreachable.
    func checkReachable() async throws(TransferError)

    /// Rebuilds a checkpoint from what a job row kept (`resume_url`, `confirmed_offset`); nil
    /// when the stored text is unusable, and the upload starts over.
    func checkpoint(restoring stored: String, confirmedOffset: Int64) -> UploadCheckpoint?
}
