import Foundation
import SystemSupport
import UploadProtocol

// `photodrain restore` (issue 33) brings a photo back from its destination: the copy is written
// into a file as it streams and hashed on the way, and counts only when it is the photo's bytes.

/// A download written into a file and hashed as its body arrives, on the transfer's thread.
/// `@unchecked Sendable`: the transfer thread feeds it and the caller reads it after the
/// transfer ended; every stored property is touched only under `lock`.
final class DownloadFile: @unchecked Sendable {
    private let lock = NSLock()
    private let digest = DownloadDigest()
    private var fd: Int32?
    private var failure: String?
    let path: String

    /// Creates (or empties) the file at `path`. Throws `TransferError` when it cannot be.
    init(path: String) throws(TransferError) {
        self.path = path
        guard let fd = openForWriting(path, mode: 0o644) else {
            throw TransferError(.invalidRequest, "\(path) could not be created: \(lastErrorText())")
        }
        self.fd = fd
    }

    /// Feeds the next piece of the body: written, then hashed.
    func observe(_ bytes: UnsafeRawBufferPointer) {
        lock.withLock {
            guard failure == nil, let fd else { return }
            guard writeAll(fd, bytes) else {
                failure = "writing \(path) failed: \(lastErrorText())"
                return
            }
        }
        digest.observe(bytes)
    }

    /// Syncs and closes the file. Present when the body was `size` bytes hashing to `expected`,
    /// else mismatched. Throws `TransferError` when the file could not be written or synced.
    func finish(expected: String, size: Int64, serverID: String?, what: String) throws(TransferError) -> StoredCopy {
        let (open, failed): (Int32?, String?) = lock.withLock {
            defer { fd = nil }
            return (fd, failure)
        }
        if let open, !syncAndClose(open), failed == nil {
            throw TransferError(.invalidRequest, "\(path) could not be synced to disk")
        }
        if let failed { throw TransferError(.invalidRequest, failed) }
        return try digest.copy(expected: expected, size: size, serverID: serverID, what: what)
    }

    /// Closes the file without syncing (the caller removes it).
    /// Sends `request` with its response body written into this file as it arrives; the file is
    /// abandoned when the request fails.
    func receive(_ request: HTTPRequest, client: HTTPClient) async throws(TransferError) -> HTTPResponse {
        var request = request
        request.responseBodyObserver = { bytes in self.observe(bytes) }
        do throws(TransferError) {
            return try await client.send(request)
        } catch {
            abandon()
            throw error
        }
    }

    func abandon() {
        lock.withLock {
            if let fd { closeFile(fd) }
            fd = nil
        }
    }

    deinit { abandon() }
}

extension ResumableUploader {
    /// Downloads the receiver's object holding the content `sha256Hex` (`GET <base>/objects/<id>/content`,
    /// the id recorded at upload, else the one its digest lookup names) into the file `path`.
    /// Present only when the bytes written are the photo's; `missing` when the receiver holds no
    /// such object. Throws `TransferError` as `storedCopy` does, or when the file cannot be written.
    public func download(sha256Hex: String, size: Int64, serverID: String?, to path: String) async throws(TransferError) -> StoredCopy {
        var ids: [String] = []
        if let serverID, !serverID.isEmpty { ids.append(serverID) }
        var lookedUp = false
        while true {
            if ids.isEmpty {
                // No id (or the recorded one is gone): the receiver's digest lookup names it.
                guard !lookedUp else { return .missing }
                lookedUp = true
                let copy = try await storedCopy(sha256Hex: sha256Hex, size: size, serverID: nil)
                guard case .present(let named) = copy else { return copy }
                guard let named, !named.isEmpty else {
                    throw TransferError(.unverifiedReceipt, "the receiver named no object id, so its bytes cannot be downloaded")
                }
                ids.append(named)
            }
            let id = ids.removeFirst()
            guard !id.contains("/"), let objectURL = UploadEndpoint.objectLookup(for: configuration.endpoint, id: id) else {
                throw TransferError(.unverifiedReceipt, "the object id \(id) cannot be asked for")
            }
            let file = try DownloadFile(path: path)
            let request = HTTPRequest(method: "GET", url: objectURL + "/content", headers: baseHeaders(interopVersion: configuration.interopVersion))
            let response = try await file.receive(request, client: client)
            switch response.status {
            case 200:
                return try file.finish(expected: sha256Hex, size: size, serverID: id, what: "object \(id)")
            case 404, 410:
                file.abandon()
                continue
            default:
                file.abandon()
                throw TransferError.forStatus(response.status, headers: response.headers)
            }
        }
    }
}

extension S3Uploader {
    /// Downloads the object an upload made (the key in `serverID`, else `PREFIX/<sha256>-<name>`)
    /// into the file `path`. Present only when the bytes written are the photo's; `missing` on
    /// 404. Throws `TransferError` for other answers, or when the file cannot be written.
    public func download(sha256Hex: String, size: Int64, filename: String, serverID: String?, to path: String) async throws(TransferError) -> StoredCopy {
        let key: String
        if let serverID, let space = serverID.lastIndex(of: " ") {
            key = String(serverID[..<space])
        } else if let serverID, !serverID.isEmpty {
            key = serverID
        } else {
            key = configuration.objectKey(for: UploadMetadata(filename: filename, sha256Hex: sha256Hex, verdictJSON: "{}"))
        }
        let file = try DownloadFile(path: path)
        let request = try signedRequest("GET", key: key, query: [], headers: [], body: .none, payloadHash: nil, mayResendPartialBody: true)
        let response = try await file.receive(request, client: client)
        switch response.status {
        case 200:
            return try file.finish(expected: sha256Hex, size: size, serverID: serverID, what: "s3 object \(key)")
        case 404:
            file.abandon()
            return .missing
        default:
            file.abandon()
            throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "GetObject")
        }
    }
}

extension UploadDestinations {
    /// Downloads the photo's copy at `destination` into the file `path` (created, or emptied
    /// first), hashed as it streams and synced: `.present` only when the file now holds `size`
    /// bytes hashing to `sha256Hex`. On any other outcome the file may hold part of a download,
    /// for the caller to remove. Throws `TransferError`.
    public static func download(from destination: any UploadDestination, sha256Hex: String, size: Int64, filename: String,
                                serverID: String?, to path: String) async throws(TransferError) -> StoredCopy {
        if let resumable = destination as? ResumableUploader {
            return try await resumable.download(sha256Hex: sha256Hex, size: size, serverID: serverID, to: path)
        }
        if let s3 = destination as? S3Uploader {
            return try await s3.download(sha256Hex: sha256Hex, size: size, filename: filename, serverID: serverID, to: path)
        }
        throw TransferError(.invalidRequest, "this destination cannot be downloaded from")
    }
}
