import SystemSupport
import Foundation
import UploadProtocol

/// What a destination says about one photo it was sent: `photodrain verify` asks each destination
/// whether it still holds exactly the bytes the store says it received. A check is the
/// destination's word about its own figures (`deep: false`), or the bytes themselves, downloaded
/// and hashed here (`deep: true`): the only check a destination that lies on purpose cannot pass.
public enum StoredCopy: Sendable, Equatable {
    /// The destination holds an object with this content and length (its id, when it names one).
    case present(serverID: String?)
    /// The destination holds no such object.
    case missing
    /// The destination holds an object under the photo's name or id, with other content.
    case mismatched(reason: String)
}

extension ResumableUploader {
    /// Asks the receiver whether it holds the content `sha256Hex` (`HEAD <base>/objects/by-digest/<sha256>`,
    /// which must answer 200 naming the object and the same `Repr-Digest`; a 404 is `missing`). A
    /// receiver without that lookup (any other answer) is asked for the object by id
    /// (`GET <base>/objects/<id>`: its `sha256` and `size`). Throws `TransferError`: transient when
    /// no answer came, `not-a-receiver` for a web page, `unverified-receipt` when the destination
    /// offers no way to check. With `deep`, a copy the receiver says it holds is then downloaded
    /// (`GET <base>/objects/<id>/content`) and hashed: present only when the bytes are the photo's.
    public func storedCopy(sha256Hex: String, size: Int64, serverID: String?, deep: Bool = false) async throws(TransferError) -> StoredCopy {
        let copy = try await describedCopy(sha256Hex: sha256Hex, size: size, serverID: serverID)
        guard deep, case .present(let id) = copy else { return copy }
        guard let id = id ?? serverID, !id.isEmpty, !id.contains("/"),
              let objectURL = UploadEndpoint.objectLookup(for: configuration.endpoint, id: id) else {
            throw TransferError(.unverifiedReceipt, "the receiver named no object id, so its bytes cannot be downloaded to check them")
        }
        let download = DownloadDigest()
        var request = HTTPRequest(method: "GET", url: objectURL + "/content", headers: baseHeaders(interopVersion: configuration.interopVersion))
        request.responseBodyObserver = { bytes in download.observe(bytes) }
        let response = try await client.send(request)
        switch response.status {
        case 200:
            return try download.copy(expected: sha256Hex, size: size, serverID: id, what: "object \(id)")
        case 404, 410:
            return .missing
        default:
            throw TransferError.forStatus(response.status, headers: response.headers, body: response.body)
        }
    }

    /// What the receiver says it holds (`storedCopy` without the download).
    private func describedCopy(sha256Hex: String, size: Int64, serverID: String?) async throws(TransferError) -> StoredCopy {
        try configuration.validate()
        guard let digest = Hex.bytes(fromHex: sha256Hex), digest.count == 32,
              let url = UploadEndpoint.digestLookup(for: configuration.endpoint, sha256Hex: sha256Hex) else {
            throw TransferError(.invalidRequest, "the content hash is not 64 hex digits")
        }
        // A digest lookup counts only from a destination that answered discovery as a receiver:
        // a server that answers 200 and the digest to any lookup proves nothing.
        guard case .resumable = try await discover() else {
            return try await copyByObjectID(sha256Hex: sha256Hex, size: size, serverID: serverID, lookupStatus: nil)
        }
        let response = try await client.send(HTTPRequest(method: "HEAD", url: url, headers: baseHeaders(interopVersion: configuration.interopVersion)))
        if let error = ReceiverAnswer.webPageError(response, url: url) { throw error }
        switch response.status {
        case 200:
            guard let field = response.headers[ResumableUpload.Header.reprDigest],
                  ResumableUpload.sha256(fromReprDigest: field) == digest else {
                throw TransferError(.unverifiedReceipt, "the receiver's digest lookup answered without naming the content (no matching Repr-Digest)")
            }
            return .present(serverID: response.headers[ResumableUpload.Header.serverResourceID])
        case 404:
            return .missing
        case 401, 403, 408, 429, 500...599:
            throw TransferError.forStatus(response.status, headers: response.headers, body: response.body)
        default:
            return try await copyByObjectID(sha256Hex: sha256Hex, size: size, serverID: serverID, lookupStatus: response.status)
        }
    }

    /// No digest lookup to trust: the object by the id the receiver gave at upload, its sidecar's
    /// `sha256` and `size` (`lookupStatus`: what the lookup answered, nil when not asked).
    private func copyByObjectID(sha256Hex: String, size: Int64, serverID: String?, lookupStatus: Int?) async throws(TransferError) -> StoredCopy {
        guard let serverID, !serverID.isEmpty, !serverID.contains("/"),
              let objectURL = UploadEndpoint.objectLookup(for: configuration.endpoint, id: serverID) else {
            let why = lookupStatus.map { "has no digest lookup (\($0))" } ?? "does not answer as a resumable-upload receiver"
            throw TransferError(.unverifiedReceipt, "the destination \(why) and no object id was recorded, so it cannot be checked",
                                httpStatus: lookupStatus)
        }
        let object = try await client.send(HTTPRequest(method: "GET", url: objectURL, headers: baseHeaders(interopVersion: configuration.interopVersion)))
        if let error = ReceiverAnswer.webPageError(object, url: objectURL) { throw error }
        struct Sidecar: Decodable { let sha256: String?; let size: Int64? }
        switch object.status {
        case 200:
            guard let sidecar = try? JSONDecoder().decode(Sidecar.self, from: Data(object.body)), let stored = sidecar.sha256 else {
                throw TransferError(.unverifiedReceipt, "the destination's object \(serverID) does not say what content it holds", httpStatus: 200)
            }
            guard stored.lowercased() == sha256Hex.lowercased(), sidecar.size.map({ $0 == size }) ?? true else {
                return .mismatched(reason: "object \(serverID) holds other content (SHA-256 \(stored.prefix(12))...)")
            }
            return .present(serverID: serverID)
        case 404, 410:
            return .missing
        default:
            throw TransferError.forStatus(object.status, headers: object.headers, body: object.body)
        }
    }
}

extension S3Uploader {
    /// HEADs the object an upload made (the key in `serverID`, else `PREFIX/<sha256>-<name>`) and
    /// compares the figures the store computes: its SHA-256 checksum (asked for with
    /// `x-amz-checksum-mode`) for an object stored in one piece, and the ETag against the one the
    /// upload's proof recorded (`serverID` is `"<key> <etag>"`): other bytes written over the
    /// object change it, whatever metadata they keep. Our own `x-amz-meta-sha256` is compared
    /// only for a mark that recorded no ETag. Missing on 404. With `deep`, the object is then
    /// downloaded and hashed. Throws `TransferError` for other failures.
    public func storedCopy(sha256Hex: String, size: Int64, filename: String, serverID: String?,
                           deep: Bool = false) async throws(TransferError) -> StoredCopy {
        var key: String
        var recordedETag: String?
        if let serverID, let space = serverID.lastIndex(of: " ") {
            key = String(serverID[..<space])
            recordedETag = S3StoreProof.bare(String(serverID[serverID.index(after: space)...]))
        } else {
            key = configuration.objectKey(for: UploadMetadata(filename: filename, sha256Hex: sha256Hex, verdictJSON: "{}"))
        }
        if recordedETag?.isEmpty == true { recordedETag = nil }
        let response = try await send("HEAD", key: key, headers: [("x-amz-checksum-mode", "ENABLED")])
        switch response.status {
        case 200:
            break
        case 404:
            return .missing
        default:
            throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "HeadObject")
        }
        guard response.headers["content-length"].flatMap({ Int64($0) }) == size else {
            return .mismatched(reason: "s3 object \(key) has another length")
        }
        // A whole-object checksum only for an object stored in one piece: stores name a multipart
        // object's composite checksum with or without its `-N` (moto without).
        if let checksum = response.headers["x-amz-checksum-sha256"], !checksum.contains("-"),
           !(response.headers["etag"] ?? "").contains("-"), let digest = Hex.bytes(fromHex: sha256Hex), checksum != Data(digest).base64EncodedString() {
            return .mismatched(reason: "s3 object \(key) holds other bytes (the store's SHA-256 is not the photo's)")
        }
        if let recordedETag {
            let now = S3StoreProof.bare(response.headers["etag"] ?? "")
            guard now == recordedETag else {
                return .mismatched(reason: "s3 object \(key) holds other bytes than were uploaded (ETag \(now.prefix(12))..., was \(recordedETag.prefix(12))...)")
            }
        } else {
            let stored = response.headers[S3Metadata.sha256Header] ?? ""
            guard stored == sha256Hex.lowercased() else {
                return .mismatched(reason: "s3 object \(key) holds other content (x-amz-meta-sha256 \(stored.isEmpty ? "missing" : String(stored.prefix(12)) + "..."))")
            }
        }
        guard deep else { return .present(serverID: serverID) }
        let download = DownloadDigest()
        let request = try signedRequest("GET", key: key, query: [], headers: [], body: .none, payloadHash: nil, mayResendPartialBody: true)
        var streaming = request
        streaming.responseBodyObserver = { bytes in download.observe(bytes) }
        let object = try await client.send(streaming)
        switch object.status {
        case 200:
            return try download.copy(expected: sha256Hex, size: size, serverID: serverID, what: "s3 object \(key)")
        case 404:
            return .missing
        default:
            throw S3Failure.error(status: object.status, body: object.body, headers: object.headers, operation: "GetObject")
        }
    }
}

/// The SHA-256 and length of a download, hashed as its body arrives on the transfer's thread.
/// `@unchecked Sendable`: the transfer thread feeds it and the caller reads it after the
/// transfer ended; every stored property is touched only under `lock`.
final class DownloadDigest: @unchecked Sendable {
    private let lock = NSLock()
    private let hasher = try? SHA256()
    private var count: Int64 = 0
    private var failed = false

    /// Feeds the next piece of the body.
    func observe(_ bytes: UnsafeRawBufferPointer) {
        lock.withLock {
            count += Int64(bytes.count)
            do { try hasher?.update(bytes) } catch { failed = true }
        }
    }

    /// Present when the body was `size` bytes hashing to `expected`, else mismatched. Throws
    /// `TransferError` when libcrypto failed.
    func copy(expected: String, size: Int64, serverID: String?, what: String) throws(TransferError) -> StoredCopy {
        lock.lock()
        defer { lock.unlock() }
        guard let hasher, !failed, let digest = try? hasher.finish() else {
            throw TransferError(.badServerResponse, "the downloaded bytes could not be hashed")
        }
        guard count == size else { return .mismatched(reason: "\(what) downloaded as \(count) bytes, not \(size)") }
        let hex = SHA256.hex(digest)
        guard hex == expected.lowercased() else {
            return .mismatched(reason: "\(what) downloaded and hashed: SHA-256 \(hex.prefix(12))..., not the photo's")
        }
        return .present(serverID: serverID)
    }
}

extension UploadDestinations {
    /// Asks `destination` whether it holds the photo (`ResumableUploader.storedCopy` or
    /// `S3Uploader.storedCopy`); with `deep`, by downloading and hashing. Throws `TransferError`.
    public static func storedCopy(at destination: any UploadDestination, sha256Hex: String, size: Int64, filename: String,
                                  serverID: String?, deep: Bool = false) async throws(TransferError) -> StoredCopy {
        if let resumable = destination as? ResumableUploader {
            return try await resumable.storedCopy(sha256Hex: sha256Hex, size: size, serverID: serverID, deep: deep)
        }
        if let s3 = destination as? S3Uploader {
            return try await s3.storedCopy(sha256Hex: sha256Hex, size: size, filename: filename, serverID: serverID, deep: deep)
        }
        throw TransferError(.invalidRequest, "this destination cannot be checked")
    }
}
