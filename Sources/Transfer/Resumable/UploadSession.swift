import Foundation
import SystemSupport
import UploadProtocol

/// One file's way through the resumable-upload protocol: creation (optimistic for small files,
/// careful for large ones), appends, offset retrieval after failures, 409 and 413 handling.
/// Lives inside one `upload` call and is never shared.
///
/// The file's SHA-256 (`Idempotency-Key`, `Repr-Digest`) may still be computing when the session
/// starts (`Digest.pending`): requests that cannot complete the upload go without it, the bytes
/// of a large file start flowing at once, and the last `deferredDigestTail` bytes wait for it and
/// go in a completing append that carries it (the receiver checks and dedupes at completion). The
/// appends' bytes are hashed on their way out (`SendingDigest`), so the digest is ready once they
/// are sent; a `BackgroundDigest` nobody started is then never run, and the file is read once.
///
/// Each part of the protocol has a file of its own (`+Creation`, `+Append`, `+Offset`, and the
/// proof of receipt in `+Receipt`), named as the receiver's `UploadEndpoint` names the other side.
final class UploadSession {
    /// Where the file's SHA-256 comes from.
    enum Digest {
        /// Known before the upload starts (64 hex digits): every request carries it.
        case known(String)
        /// Being computed meanwhile.
        case pending(BackgroundDigest)
    }

    /// The bytes held back for the completing append while the digest is still being computed.
    static let deferredDigestTail: Int64 = 1 << 20

    let uploader: ResumableUploader
    let path: String
    let size: Int64
    /// The file as the session found it; a digest made from the bytes sent is used only if the
    /// file is still the same when it is finished.
    private let stamp: ReadOnlyFile.Stamp
    let interopVersion: Int
    /// The headers every upload request carries, but the digest ones.
    private let commonHeaders: [(name: String, value: String)]
    /// `Idempotency-Key` and `Repr-Digest`, once the digest is known.
    private(set) var digestHeaders: [(name: String, value: String)]?
    private let pendingDigest: BackgroundDigest?
    /// While the digest is pending: the file hashed from the bytes the appends send, which spares
    /// a large file a second read (`pendingDigest` is then awaited only if this cannot finish).
    let sendingDigest: SendingDigest?
    private let progress: (UploadProgress) -> Void
    private let checkpoint: (UploadCheckpoint) throws -> Void
    /// Passed to every request that carries file bytes (`HTTPRequest.onBodySent`).
    let onBodySent: (@Sendable () -> Void)?
    var configuration: UploadConfiguration { uploader.configuration }

    /// The upload resource, once the server named one.
    var location: String?
    /// The offset the server last acknowledged.
    var offset: Int64 = 0
    var limits = UploadLimits()
    /// The append size after a 413 taught the client to send less.
    var shrunkAppendSize: Int64?
    var bytesSent: Int64 = 0
    var resumesLeft: Int
    /// The acknowledged offset when the resume budget was last refilled.
    var offsetAtLastRecovery: Int64 = 0
    var restartsLeft = 1
    var resumeAttempt = 0
    /// The offset the server confirmed for the saved upload this session resumed; nil when it
    /// resumed none, or started over.
    var resumedFrom: Int64?

    /// Reads the file's size and builds the headers every upload request carries.
    /// Throws `TransferError` for an unreadable file or unusable metadata.
    init(uploader: ResumableUploader, path: String, filename: [UInt8], verdictJSON: String, provenance: Provenance?, digest: Digest,
         interopVersion: Int, progress: @escaping (UploadProgress) -> Void,
         checkpoint: @escaping (UploadCheckpoint) throws -> Void, onBodySent: (@Sendable () -> Void)? = nil) throws(TransferError) {
        guard ResumableUpload.supportedInteropVersions.contains(interopVersion) else {
            throw TransferError(.invalidRequest, "interop version \(interopVersion) is not in 3...8")
        }
        switch digest {
        case .known(let hex):
            digestHeaders = try Self.digestHeaders(sha256Hex: hex)
            pendingDigest = nil
            sendingDigest = nil
        case .pending(let background):
            digestHeaders = nil
            pendingDigest = background
            sendingDigest = SendingDigest()
        }
        // The file name may hold any character (a tab, a line break): Content-Disposition
        // percent-encodes it in filename*. The verdict goes into a header as it is.
        guard Self.isSingleLine(verdictJSON) else {
            throw TransferError(.invalidRequest, "the verdict contains line breaks or control characters")
        }
        self.uploader = uploader
        self.path = path
        let stamp = try TransferError.translating { () throws(SystemError) in try ReadOnlyFile(path: path).stamp() }
        self.size = stamp.size
        self.stamp = stamp
        self.interopVersion = interopVersion
        self.progress = progress
        self.checkpoint = checkpoint
        self.onBodySent = onBodySent
        self.resumesLeft = max(0, uploader.configuration.maxResumesPerUpload)
        var headers = uploader.baseHeaders(interopVersion: interopVersion)
        headers.append((ResumableUpload.Header.contentDisposition, ResumableUpload.contentDisposition(filename: filename)))
        headers.append((ResumableUpload.Header.verdict, verdictJSON))
        // Provenance goes on every request, like the verdict: the receiver keeps what the creation
        // carried and fills what is missing from an append.
        headers += provenance?.headers ?? []
        self.commonHeaders = headers
    }

    /// `Idempotency-Key` and `Repr-Digest` for a digest given as hex; throws `invalidRequest` when
    /// it is not 64 hex digits.
    private static func digestHeaders(sha256Hex: String) throws(TransferError) -> [(name: String, value: String)] {
        guard let digest = Hex.bytes(fromHex: sha256Hex), digest.count == 32 else {
            throw TransferError(.invalidRequest, "the content hash is not 64 hex digits")
        }
        return [(ResumableUpload.Header.idempotencyKey, sha256Hex.lowercased()),
                (ResumableUpload.Header.reprDigest, ResumableUpload.reprDigest(sha256: digest))]
    }

    /// The headers for a request that may complete the upload: waits for the digest if needed
    /// (finished by the hasher, or from the bytes the appends sent plus the held-back rest, or by
    /// waiting for the hasher, in that order of preference).
    func completingHeaders() async throws(TransferError) -> [(name: String, value: String)] {
        if let digestHeaders { return commonHeaders + digestHeaders }
        guard let pendingDigest else { throw TransferError(.invalidRequest, "the upload has no content hash") }
        var hex = try pendingDigest.sha256HexIfFinished()
        if hex == nil, let sent = try sendingDigest?.sha256Hex(path: path, size: size) {
            // The bytes hashed went out over time: a file rewritten meanwhile would make the
            // digest describe a mix of versions, which the server would accept.
            guard try TransferError.translating({ () throws(SystemError) in try ReadOnlyFile(path: path).stamp() }) == stamp else {
                throw TransferError(.fileUnreadable, "the file changed while it was being sent")
            }
            hex = sent
        }
        if hex == nil { hex = try await pendingDigest.sha256Hex() }
        guard let hex else { throw TransferError(.invalidRequest, "the upload has no content hash") }
        let known = try Self.digestHeaders(sha256Hex: hex)
        digestHeaders = known
        return commonHeaders + known
    }

    /// The headers for a request that will not complete the upload: with the digest if known.
    func partialHeaders() throws(TransferError) -> [(name: String, value: String)] {
        if digestHeaders == nil, let hex = try pendingDigest?.sha256HexIfFinished() {
            digestHeaders = try Self.digestHeaders(sha256Hex: hex)
        }
        return commonHeaders + (digestHeaders ?? [])
    }

    /// Runs the upload to completion.
    func run(resumeFrom saved: UploadCheckpoint?) async throws(TransferError) -> UploadReceipt {
        if let saved {
            // A saved upload URL came from a server too: it is held to the destination's origin.
            location = try UploadEndpoint.onDestinationOrigin(saved.location, destination: configuration.endpoint,
                                                              source: "the saved upload to resume")
            if var done = try await retrieveOffset() {
                done.resumedFromOffset = size
                return done
            }
            if location != nil {
                resumedFrom = offset
                return try await appendUntilComplete()
            }
        }
        return try await create()
    }

    // MARK: Helpers

    func updateLimits(from headers: [String: String]) {
        if let field = headers[ResumableUpload.Header.uploadLimit], let parsed = UploadLimits(fieldValue: field) {
            limits = parsed
        }
    }

    func save() throws(TransferError) {
        guard let location else { return }
        do {
            try checkpoint(UploadCheckpoint(location: location, offset: offset, interopVersion: interopVersion))
        } catch {
            throw TransferError(.checkpointFailed, "the upload checkpoint could not be saved")
        }
    }

    func report() {
        progress(UploadProgress(acknowledgedBytes: offset, totalBytes: size))
    }

    func checkCancellation() throws(TransferError) {
        if Task.isCancelled { throw TransferError(.cancelled, "the transfer was cancelled") }
    }

    /// How much of the file a 2xx answer to a completing request says the server holds, when it
    /// says the upload is not complete (`Upload-Complete: ?0`, or an `Upload-Offset` short of the
    /// length); nil when it does not. Throws `bad-server-response` for an offset past the length.
    func partialAcknowledgement(in response: HTTPResponse) throws(TransferError) -> Int64? {
        var taken: Int64?
        if let field = response.headers[ResumableUpload.Header.uploadOffset] {
            guard let value = StructuredField.integer(field), value >= 0, value <= size else {
                throw TransferError(.badServerResponse, "the final answer has an impossible Upload-Offset", httpStatus: response.status)
            }
            if value < size { taken = value }
        }
        if ResumableUpload.isComplete(headers: response.headers) == false { taken = taken ?? 0 }
        return taken
    }

    private static func isSingleLine(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
    }
}
