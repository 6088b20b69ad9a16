import Foundation
import UploadProtocol

/// What a destination says about one photo it was sent: `photodrain verify` asks each destination
/// whether it still holds exactly the bytes the store says it received.
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
    /// offers no way to check.
    public func storedCopy(sha256Hex: String, size: Int64, serverID: String?) async throws(TransferError) -> StoredCopy {
        try configuration.validate()
        guard let digest = Hex.bytes(fromHex: sha256Hex), digest.count == 32,
              let url = UploadEndpoint.digestLookup(for: configuration.endpoint, sha256Hex: sha256Hex) else {
            throw TransferError(.invalidRequest, "the content hash is not 64 hex digits")
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
            throw TransferError.forStatus(response.status, headers: response.headers)
        default:
            break
        }
        // No digest lookup: the object by the id the receiver gave at upload.
        guard let serverID, !serverID.isEmpty, !serverID.contains("/"),
              let objectURL = UploadEndpoint.objectLookup(for: configuration.endpoint, id: serverID) else {
            throw TransferError(.unverifiedReceipt, "the destination has no digest lookup (\(response.status)) and no object id was recorded, so it cannot be checked",
                                httpStatus: response.status)
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
            throw TransferError.forStatus(object.status, headers: object.headers)
        }
    }
}

extension S3Uploader {
    /// HEADs the object an upload made (`PREFIX/<sha256>-<name>`, or the key in `serverID`): present
    /// when its `x-amz-meta-sha256` and length are this file's, missing on 404. Throws
    /// `TransferError` for other failures.
    public func storedCopy(sha256Hex: String, size: Int64, filename: String, serverID: String?) async throws(TransferError) -> StoredCopy {
        let key: String
        if let serverID, let space = serverID.lastIndex(of: " ") {
            key = String(serverID[..<space])
        } else {
            key = configuration.objectKey(for: UploadMetadata(filename: filename, sha256Hex: sha256Hex, verdictJSON: "{}"))
        }
        let response = try await send("HEAD", key: key)
        switch response.status {
        case 200:
            let stored = response.headers[S3Metadata.sha256Header] ?? ""
            guard stored == sha256Hex.lowercased() else {
                return .mismatched(reason: "s3 object \(key) holds other content (x-amz-meta-sha256 \(stored.isEmpty ? "missing" : String(stored.prefix(12)) + "..."))")
            }
            guard response.headers["content-length"].flatMap({ Int64($0) }) == size else {
                return .mismatched(reason: "s3 object \(key) has another length")
            }
            return .present(serverID: serverID)
        case 404:
            return .missing
        default:
            throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "HeadObject")
        }
    }
}

extension UploadDestinations {
    /// Asks `destination` whether it holds the photo (`ResumableUploader.storedCopy` or
    /// `S3Uploader.storedCopy`). Throws `TransferError`.
    public static func storedCopy(at destination: any UploadDestination, sha256Hex: String, size: Int64, filename: String,
                                  serverID: String?) async throws(TransferError) -> StoredCopy {
        if let resumable = destination as? ResumableUploader {
            return try await resumable.storedCopy(sha256Hex: sha256Hex, size: size, serverID: serverID)
        }
        if let s3 = destination as? S3Uploader {
            return try await s3.storedCopy(sha256Hex: sha256Hex, size: size, filename: filename, serverID: serverID)
        }
        throw TransferError(.invalidRequest, "this destination cannot be checked")
    }
}
