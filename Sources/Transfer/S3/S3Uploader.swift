import UploadProtocol
import Foundation
import Synchronization

/// Uploads files to an S3 bucket (AWS or any S3-compatible store) with SigV4-signed requests:
/// one streamed PUT for a small file, a multipart upload for a large one (parts streamed from the
/// file at their offsets, the upload id and every part's ETag checkpointed before moving on,
/// resumed with ListParts, cancelled with AbortMultipartUpload). The object key is
/// `PREFIX/<sha256>-<name>`, the verdict travels in `x-amz-meta-verdict` (`S3Metadata`), and the
/// receipt's `serverID` is `"<key> <etag>"`.
///
/// ```swift
/// let configuration = try S3Configuration(destination: "s3://photos/library", endpoint: "http://127.0.0.1:9000",
///                                         credentials: try S3Credentials.resolve(environment: env, home: home))
/// let receipt = try await S3Uploader(configuration: configuration).upload(file: path, metadata: metadata)
/// ```
public final class S3Uploader: UploadDestination {
    /// The bucket, credentials and tuning.
    public let configuration: S3Configuration
    let client: HTTPClient
    let signer: SigV4Signer
    /// Whether this store's single-PUT ETags have proven to be the MD5 of the bytes it holds: nil
    /// until one answer tells. While true, a single PUT sends `Content-MD5` alone, without
    /// `x-amz-checksum-sha256`: the ETag is the proof and `Content-MD5` (with the signed payload
    /// hash) is what a checking store refuses changed bytes by, while a store may spend more on
    /// the checksum than the transfer takes (moto: 100 x 3 MiB took 3.4 s with it, 1.5 s
    /// without, BENCHMARKS.md).
    let singlePutETagsAreMD5 = Mutex<Bool?>(nil)

    /// Creates an uploader. Pass a `client` to share connections with other uploaders.
    public init(configuration: S3Configuration, client: HTTPClient? = nil) {
        self.configuration = configuration
        self.client = client ?? HTTPClient(options: configuration.http)
        self.signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region, service: "s3")
    }

    /// `s3://BUCKET/PREFIX`.
    public var endpoint: String { configuration.destination }

    /// `s3://BUCKET/PREFIX at ENDPOINT`: the bucket and prefix on this endpoint (`DestinationIdentity`).
    public var identity: DestinationIdentity { DestinationIdentity(s3: configuration) }

    /// Uploads the file at `path` to `PREFIX/<sha256>-<name>`. Files up to the multipart threshold
    /// go in one PUT whose `x-amz-content-sha256` is the content hash, so S3 refuses bytes that
    /// changed since hashing. Larger files go by multipart upload; with `resumeFrom` holding an
    /// upload id, ListParts tells which parts S3 already has and only the others are sent (an
    /// upload S3 no longer knows is started over). `checkpoint` gets the upload id before any part
    /// is sent and every part's ETag as it is acknowledged. Throws `TransferError`.
    public func upload(file path: String, metadata: UploadMetadata, resumeFrom: UploadCheckpoint? = nil,
                       progress: @escaping (UploadProgress) -> Void = { _ in },
                       checkpoint: @escaping (UploadCheckpoint) throws -> Void = { _ in }) async throws(TransferError) -> UploadReceipt {
        try configuration.validate()
        let session = try S3UploadSession(uploader: self, path: path, metadata: metadata, progress: progress, checkpoint: checkpoint)
        return try await session.run(resumeFrom: resumeFrom)
    }

    /// Aborts the checkpoint's multipart upload (AbortMultipartUpload), so S3 keeps none of its
    /// parts. A checkpoint without an upload id has nothing to abort; 404 means already gone.
    /// Throws `TransferError` for other answers.
    public func cancel(_ checkpoint: UploadCheckpoint) async throws(TransferError) {
        guard let uploadID = checkpoint.uploadID else { return }
        guard let key = configuration.key(fromObjectURI: checkpoint.location) else {
            throw TransferError(.invalidRequest, "the checkpoint names an object outside this bucket")
        }
        let response = try await send("DELETE", key: key, query: [("uploadId", uploadID)])
        guard (200...299).contains(response.status) || response.status == 404 else {
            throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "AbortMultipartUpload")
        }
    }

    /// Sends a signed HEAD for the bucket; any HTTP answer means reachable.
    public func checkReachable() async throws(TransferError) {
        _ = try await send("HEAD", key: nil)
    }

    /// A stored checkpoint: the JSON form S3 uploads save; nil when it is not one.
    public func checkpoint(restoring stored: String, confirmedOffset: Int64) -> UploadCheckpoint? {
        guard let restored = UploadCheckpoint(storedForm: stored, confirmedOffset: confirmedOffset, interopVersion: 0),
              restored.uploadID != nil else { return nil }
        return restored
    }

    /// Sends one signed request for an object (`key`) or the bucket (`key` nil) and returns S3's
    /// answer, whatever its status: the building block of the upload, and of tools and tests that
    /// read objects back. `payloadHash` is the body's hex SHA-256 (`UNSIGNED-PAYLOAD` is allowed);
    /// for a `.bytes` body it may be left nil and is computed. Throws `TransferError` when no
    /// answer arrived or the task was cancelled.
    public func send(_ method: String, key: String?, query: [(name: String, value: String)] = [],
                     headers: [(name: String, value: String)] = [], body: HTTPRequest.Body = .none,
                     payloadHash: String? = nil, mayResendPartialBody: Bool = true) async throws(TransferError) -> HTTPResponse {
        let request = try signedRequest(method, key: key, query: query, headers: headers, body: body,
                                        payloadHash: payloadHash, mayResendPartialBody: mayResendPartialBody)
        return try await client.send(request)
    }

    /// Sends a request made by `signedRequest` (after setting what `send` cannot, such as a
    /// `responseBodyObserver`) and returns S3's answer, whatever its status.
    public func send(request: HTTPRequest) async throws(TransferError) -> HTTPResponse {
        try await client.send(request)
    }

    /// The signed `HTTPRequest` for `send` (public for callers that stream a body, e.g. the
    /// receiver hashing an object as it downloads).
    public func signedRequest(_ method: String, key: String?, query: [(name: String, value: String)],
                       headers: [(name: String, value: String)], body: HTTPRequest.Body, payloadHash: String?,
                       mayResendPartialBody: Bool, date: Date = Date()) throws(TransferError) -> HTTPRequest {
        let target = configuration.target(key: key, query: query)
        let hash: String
        if let payloadHash {
            hash = payloadHash
        } else if case .bytes(let bytes) = body {
            hash = Hex.string(try FileDigest.sha256(bytes: bytes))
        } else {
            hash = SigV4Signer.emptyPayloadHash
        }
        var all: [(name: String, value: String)] = [("host", target.host), ("x-amz-content-sha256", hash)] + headers
        all += try signer.signatureHeaders(method: method, path: target.path, query: query, headers: all,
                                           payloadHash: hash, date: date)
        return HTTPRequest(method: method, url: target.url, headers: all, body: body, mayResendPartialBody: mayResendPartialBody)
    }
}
