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

    private let uploader: ResumableUploader
    private let path: String
    private let size: Int64
    /// The file as the session found it; a digest made from the bytes sent is used only if the
    /// file is still the same when it is finished.
    private let stamp: ReadOnlyFile.Stamp
    private let interopVersion: Int
    /// The headers every upload request carries, but the digest ones.
    private let commonHeaders: [(name: String, value: String)]
    /// `Idempotency-Key` and `Repr-Digest`, once the digest is known.
    private var digestHeaders: [(name: String, value: String)]?
    private let pendingDigest: BackgroundDigest?
    /// While the digest is pending: the file hashed from the bytes the appends send, which spares
    /// a large file a second read (`pendingDigest` is then awaited only if this cannot finish).
    private let sendingDigest: SendingDigest?
    private let progress: (UploadProgress) -> Void
    private let checkpoint: (UploadCheckpoint) throws -> Void
    /// Passed to every request that carries file bytes (`HTTPRequest.onBodySent`).
    private let onBodySent: (@Sendable () -> Void)?
    private var configuration: UploadConfiguration { uploader.configuration }

    /// The upload resource, once the server named one.
    private var location: String?
    /// The offset the server last acknowledged.
    private var offset: Int64 = 0
    private var limits = UploadLimits()
    /// The append size after a 413 taught the client to send less.
    private var shrunkAppendSize: Int64?
    private var bytesSent: Int64 = 0
    private var resumesLeft: Int
    /// The acknowledged offset when the resume budget was last refilled.
    private var offsetAtLastRecovery: Int64 = 0
    private var restartsLeft = 1
    private var resumeAttempt = 0
    /// The offset the server confirmed for the saved upload this session resumed; nil when it
    /// resumed none, or started over.
    private var resumedFrom: Int64?

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
    private func completingHeaders() async throws(TransferError) -> [(name: String, value: String)] {
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
    private func partialHeaders() throws(TransferError) -> [(name: String, value: String)] {
        if digestHeaders == nil, let hex = try pendingDigest?.sha256HexIfFinished() {
            digestHeaders = try Self.digestHeaders(sha256Hex: hex)
        }
        return commonHeaders + (digestHeaders ?? [])
    }

    /// Runs the upload to completion.
    func run(resumeFrom saved: UploadCheckpoint?) async throws(TransferError) -> UploadReceipt {
        if let saved {
            location = saved.location
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

    // MARK: Creation

    private func create() async throws(TransferError) -> UploadReceipt {
        location = nil
        offset = 0
        shrunkAppendSize = nil
        switch try await uploader.discover() {
        case .plain:
            // Nothing such a server answers proves the photo arrived (any web server takes a
            // POST): only on explicit request, and then the upload is marked unverified.
            guard configuration.acceptUnverified else {
                throw TransferError(.unverifiedReceipt, """
                    \(UploadEndpoint.loggable(configuration.endpoint)) does not speak the resumable-upload protocol \
                    (its OPTIONS answer has no Upload-Limit), so nothing it answers proves a photo arrived; nothing was sent. \
                    Check the URL, or pass --accept-unverified to upload there anyway (marked uploaded-unverified)
                    """)
            }
            return try await plainUpload()
        case .resumable(let discovered):
            limits = discovered
            if let maxSize = limits.maxSize, size > maxSize {
                throw TransferError(.tooLarge, "the file is larger than the server's maximum upload size")
            }
            if size <= configuration.optimisticCreationLimit {
                if let done = try await optimisticCreation() { return done }
            } else {
                try await carefulCreation()
            }
            return try await appendUntilComplete()
        }
    }

    /// Sends the whole file with the completion header. Returns the receipt when it completes;
    /// nil when a 104 gave a Location and the transfer then failed, so appending continues there.
    private func optimisticCreation() async throws(TransferError) -> UploadReceipt? {
        var headers = try await completingHeaders() + creationHeaders(complete: true)
        headers.append((ResumableUpload.Header.contentType, "application/octet-stream"))
        // The 104's upload URL is saved the moment it arrives, while the body is still going out:
        // a process killed mid-body then resumes from the server's offset instead of starting over.
        let (interims, sink) = AsyncStream.makeStream(of: HTTPInterimResponse.self)
        var request = HTTPRequest(
            method: "POST", url: configuration.endpoint, headers: headers,
            body: .file(path: path, offset: 0, length: size), mayResendPartialBody: false, onBodySent: onBodySent,
            onInterimResponse: { sink.yield($0) })
        // The body waits for the 104 (sent before the 100): a 104 sent while the body streams
        // can be lost with the connection (a proxy that cuts drops what it has not forwarded,
        // and libcurl stops at a send error without reading what arrived), and then the upload
        // could only start over (measured through a cutting proxy: 5 of 6 cut creations
        // restarted from 0).
        request.waitsForContinue = size > 0
        let client = uploader.client
        async let finished = Self.exchange(request, on: client, then: sink)
        for await interim in interims where location == nil {
            if let early = resumptionLocation(in: [interim]) {
                location = early
                offset = 0
                try? save()  // best effort: a failure to save here is retried when adopting it below
            }
        }
        let exchange = await finished
        bytesSent += exchange.bytesSent
        let interimLocation = resumptionLocation(in: exchange.interimResponses)
        switch exchange.result {
        case .success(let response) where (200...299).contains(response.status):
            if let error = ReceiverAnswer.webPageError(response, url: configuration.endpoint) { throw error }
            if let field = response.headers[ResumableUpload.Header.location] {
                location = UploadEndpoint.resolve(location: field, against: configuration.endpoint)
            }
            location = location ?? interimLocation
            if let taken = try partialAcknowledgement(in: response) {
                // The server took only part of the body (or says so): append the rest there.
                guard location != nil else {
                    throw TransferError(.unverifiedReceipt, "the server answered the upload as incomplete (\(taken) of \(size) bytes) without an upload URL to finish it",
                                        httpStatus: response.status)
                }
                offset = taken
                try save()
                report()
                return nil
            }
            offset = size
            report()
            return try await verifiedReceipt(for: response)
        case .success(let response) where response.status == 413 && size > 0:
            // The body is too large for one request: create empty and append in smaller pieces.
            try await carefulCreation()
            return nil
        case .success(let response):
            let error = TransferError.forStatus(response.status, creation: true, headers: response.headers)
            guard error.isTransient, let interimLocation else { throw error }
            try await adopt(location: interimLocation)
            try await recover(from: error)
            return try await retrieveOffsetAfterRecovery()
        case .failure(let error):
            guard error.isTransient, let interimLocation else { throw error }
            try await adopt(location: interimLocation)
            try await recover(from: error)
            return try await retrieveOffsetAfterRecovery()
        }
    }

    /// Runs `request` and ends `sink` (the stream of its interim responses) when it is over.
    private static func exchange(_ request: HTTPRequest, on client: HTTPClient,
                                 then sink: AsyncStream<HTTPInterimResponse>.Continuation) async -> HTTPExchange {
        let exchange = await client.exchange(request)
        sink.finish()
        return exchange
    }

    /// Creates the upload resource with an empty `?0` request and saves its URL before any byte.
    private func carefulCreation() async throws(TransferError) {
        let response = try await uploader.client.send(HTTPRequest(
            method: "POST", url: configuration.endpoint, headers: try partialHeaders() + creationHeaders(complete: false),
            body: .empty))
        if let error = ReceiverAnswer.webPageError(response, url: configuration.endpoint) { throw error }
        guard (200...299).contains(response.status) else {
            throw TransferError.forStatus(response.status, creation: true, headers: response.headers)
        }
        guard let field = response.headers[ResumableUpload.Header.location],
              let resolved = UploadEndpoint.resolve(location: field, against: configuration.endpoint) else {
            throw TransferError(.badServerResponse, "the creation response has no usable Location")
        }
        updateLimits(from: response.headers)
        try await adopt(location: resolved)
    }

    /// Takes a new upload URL at offset 0 and saves it.
    private func adopt(location newLocation: String) async throws(TransferError) {
        location = newLocation
        offset = 0
        try save()
    }

    /// The whole file in one request, for servers without the resumable protocol.
    private func plainUpload() async throws(TransferError) -> UploadReceipt {
        var headers = try await completingHeaders()
        headers.append((ResumableUpload.Header.contentType, "application/octet-stream"))
        let response = try await uploader.client.send(HTTPRequest(
            method: configuration.plainUploadMethod, url: configuration.endpoint, headers: headers,
            body: .file(path: path, offset: 0, length: size), onBodySent: onBodySent))
        bytesSent += response.bytesSent
        if let error = ReceiverAnswer.webPageError(response, url: configuration.endpoint) { throw error }
        guard (200...299).contains(response.status) else {
            throw TransferError.forStatus(response.status, creation: true, headers: response.headers)
        }
        if ResumableUpload.isComplete(headers: response.headers) == false {
            throw TransferError(.unverifiedReceipt, "the server answered the upload as incomplete", httpStatus: response.status)
        }
        offset = size
        report()
        var done = try await verifiedReceipt(for: response)
        done.resumable = false
        return done
    }

    // MARK: Appending

    private func appendUntilComplete() async throws(TransferError) -> UploadReceipt {
        var conflicts = 0
        // Appends the server answered 2xx to without taking a byte: a server that acknowledges
        // everything and stores nothing would otherwise be fed the same bytes for ever.
        var emptyAcknowledgements = 0
        while true {
            try checkCancellation()
            guard let target = location else {
                throw TransferError(.badServerResponse, "the upload has no resource URL")
            }
            let remaining = size - offset
            var length = remaining
            if let cap = appendCap() { length = min(length, cap) }
            var headers = try partialHeaders()
            if length == remaining && digestHeaders == nil {
                // Send what can go without the digest; the completing append waits for it.
                let tail = max(Self.deferredDigestTail, limits.minAppendSize ?? 0)
                if length > tail && length - tail >= (limits.minAppendSize ?? 0) {
                    length -= tail
                } else {
                    headers = try await completingHeaders()
                }
            }
            let complete = length == remaining
            headers.append((ResumableUpload.Header.uploadOffset, String(offset)))
            let completion = ResumableUpload.completionHeader(complete: complete, interopVersion: interopVersion)
            headers.append((completion.name, completion.value))
            if interopVersion >= 6 {
                headers.append((ResumableUpload.Header.contentType, ResumableUpload.partialUploadMediaType))
            }
            // While the digest is unknown, the bytes going out are hashed on the way.
            let observer: (@Sendable (UnsafeRawBufferPointer, Int64) -> Void)?
            if digestHeaders == nil, let sendingDigest {
                observer = { bytes, at in sendingDigest.observe(bytes, at: at) }
            } else {
                observer = nil
            }
            let exchange = await uploader.client.exchange(HTTPRequest(
                method: "PATCH", url: target, headers: headers, body: .file(path: path, offset: offset, length: length),
                mayResendPartialBody: false, onBodySent: onBodySent, bodyObserver: observer))
            bytesSent += exchange.bytesSent
            let response: HTTPResponse
            switch exchange.result {
            case .failure(let error):
                try await recover(from: error)
                if let done = try await retrieveOffsetAfterRecovery() { return done }
                continue
            case .success(let received):
                response = received
            }
            updateLimits(from: response.headers)
            if let error = ReceiverAnswer.webPageError(response, url: target) { throw error }
            switch response.status {
            case 200...299:
                // A completing append is done unless the server says it is not (`Upload-Complete: ?0`,
                // or an `Upload-Offset` short of the length); the receipt still has to prove it.
                if complete, try partialAcknowledgement(in: response) == nil {
                    offset = size
                    report()
                    return try await verifiedReceipt(for: response)
                }
                var acknowledged = offset + length
                if let field = response.headers[ResumableUpload.Header.uploadOffset] {
                    guard let value = StructuredField.integer(field), value >= offset, value <= offset + length else {
                        throw TransferError(.badServerResponse, "the append response has an impossible Upload-Offset")
                    }
                    acknowledged = value
                }
                if acknowledged == offset && length > 0 {
                    emptyAcknowledgements += 1
                    guard emptyAcknowledgements <= 3 else {
                        throw TransferError(.unverifiedReceipt, "the server acknowledges appends without taking their bytes",
                                            httpStatus: response.status)
                    }
                } else {
                    emptyAcknowledgements = 0
                }
                offset = acknowledged
                conflicts = 0
                try save()
                report()
            case 409:
                conflicts += 1
                guard conflicts <= 3 else {
                    throw TransferError(.badServerResponse, "the server keeps rejecting the offset it reports", httpStatus: 409)
                }
                if let done = try await retrieveOffsetAfterRecovery() { return done }
            case 413:
                try shrinkAppends(after: length)
            case 404, 410:
                try await startOver()
                return try await create()
            default:
                let error = TransferError.forStatus(response.status, headers: response.headers)
                try await recover(from: error)
                if let done = try await retrieveOffsetAfterRecovery() { return done }
            }
        }
    }

    /// After a recovery, asks for the offset; a vanished resource means a fresh creation.
    private func retrieveOffsetAfterRecovery() async throws(TransferError) -> UploadReceipt? {
        if let done = try await retrieveOffset() { return done }
        if location == nil {
            try await startOver()
            return try await create()
        }
        return nil
    }

    /// The largest append allowed now: the server's max-append-size, or what a 413 taught.
    private func appendCap() -> Int64? {
        switch (limits.maxAppendSize, shrunkAppendSize) {
        case let (a?, b?): return max(1, min(a, b))
        case let (a?, nil): return max(1, a)
        case let (nil, b?): return b
        case (nil, nil): return nil
        }
    }

    /// Halves the append after a 413, never below min-append-size; permanent when it cannot shrink.
    private func shrinkAppends(after length: Int64) throws(TransferError) {
        let floor = max(1, limits.minAppendSize ?? 1)
        let smaller = max(floor, length / 2)
        guard smaller < length else {
            throw TransferError(.tooLarge, "the server refused even the smallest allowed append", httpStatus: 413)
        }
        shrunkAppendSize = smaller
    }

    // MARK: Offset retrieval and recovery

    /// HEAD on the upload URL. Sets `offset`; clears `location` when the server no longer knows
    /// the resource (404/410); returns a receipt when the server says the upload is complete.
    private func retrieveOffset() async throws(TransferError) -> UploadReceipt? {
        guard let target = location else { return nil }
        while true {
            try checkCancellation()
            let exchange = await uploader.client.exchange(HTTPRequest(
                method: "HEAD", url: target, headers: uploader.baseHeaders(interopVersion: interopVersion)))
            let response: HTTPResponse
            switch exchange.result {
            case .failure(let error):
                try await recover(from: error)
                continue
            case .success(let received):
                response = received
            }
            if let error = ReceiverAnswer.webPageError(response, url: target) { throw error }
            switch response.status {
            case 200...299:
                guard let field = response.headers[ResumableUpload.Header.uploadOffset],
                      let value = StructuredField.integer(field), value >= 0, value <= size else {
                    throw TransferError(.badServerResponse, "the offset response has a missing or impossible Upload-Offset")
                }
                updateLimits(from: response.headers)
                offset = value
                try save()
                report()
                if ResumableUpload.isComplete(headers: response.headers) == true {
                    guard value == size else {
                        throw TransferError(.badServerResponse, "the server reports a completed upload of a different size")
                    }
                    return try await verifiedReceipt(for: response)
                }
                return nil
            case 404, 410:
                location = nil
                return nil
            default:
                try await recover(from: TransferError.forStatus(response.status, headers: response.headers))
            }
        }
    }

    /// Spends one resume from the budget (after a pause) if the error is transient and there is an
    /// upload URL to resume; otherwise rethrows it.
    private func recover(from error: TransferError) async throws(TransferError) {
        // A cut after the server acknowledged more than at the last one is progress: the budget
        // starts again, so a link that keeps cutting but keeps moving the upload on never fails
        // it. Only cuts that gain nothing use the budget up.
        if offset > offsetAtLastRecovery {
            offsetAtLastRecovery = offset
            resumesLeft = max(0, configuration.maxResumesPerUpload)
            resumeAttempt = 0
        }
        guard error.isTransient, location != nil, resumesLeft > 0 else { throw error }
        resumesLeft -= 1
        resumeAttempt += 1
        if configuration.resumeBackoff > .zero {
            do {
                try await Task.sleep(for: configuration.resumeBackoff * resumeAttempt)
            } catch {
                throw TransferError(.cancelled, "the transfer was cancelled")
            }
        }
    }

    /// Gives up on a resource the server forgot; only once per call.
    private func startOver() async throws(TransferError) {
        guard restartsLeft > 0 else {
            throw TransferError(.badServerResponse, "the server lost the upload resource twice", httpStatus: 404)
        }
        restartsLeft -= 1
        location = nil
        resumedFrom = nil
    }

    // MARK: Helpers

    private func creationHeaders(complete: Bool) -> [(name: String, value: String)] {
        let completion = ResumableUpload.completionHeader(complete: complete, interopVersion: interopVersion)
        var headers: [(name: String, value: String)] = [(completion.name, completion.value)]
        if interopVersion >= 6 {
            headers.append((ResumableUpload.Header.uploadLength, String(size)))
        }
        return headers
    }

    /// The Location of the first 104 that echoes this client's interop version; others are ignored.
    private func resumptionLocation(in interim: [HTTPInterimResponse]) -> String? {
        for response in interim where response.status == ResumableUpload.uploadResumptionSupported {
            guard let version = response.headers[ResumableUpload.Header.interopVersion],
                  StructuredField.integer(version) == Int64(interopVersion),
                  let field = response.headers[ResumableUpload.Header.location],
                  let resolved = UploadEndpoint.resolve(location: field, against: configuration.endpoint) else { continue }
            updateLimits(from: response.headers)
            return resolved
        }
        return nil
    }

    private func updateLimits(from headers: [String: String]) {
        if let field = headers[ResumableUpload.Header.uploadLimit], let parsed = UploadLimits(fieldValue: field) {
            limits = parsed
        }
    }

    private func save() throws(TransferError) {
        guard let location else { return }
        do {
            try checkpoint(UploadCheckpoint(location: location, offset: offset, interopVersion: interopVersion))
        } catch {
            throw TransferError(.checkpointFailed, "the upload checkpoint could not be saved")
        }
    }

    private func report() {
        progress(UploadProgress(acknowledgedBytes: offset, totalBytes: size))
    }

    private func checkCancellation() throws(TransferError) {
        if Task.isCancelled { throw TransferError(.cancelled, "the transfer was cancelled") }
    }

    /// How much of the file a 2xx answer to a completing request says the server holds, when it
    /// says the upload is not complete (`Upload-Complete: ?0`, or an `Upload-Offset` short of the
    /// length); nil when it does not. Throws `bad-server-response` for an offset past the length.
    private func partialAcknowledgement(in response: HTTPResponse) throws(TransferError) -> Int64? {
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

    /// The receipt for the server's final answer, once the server has shown that it holds exactly
    /// this file's bytes: the SHA-256 of the content it stored (`Repr-Digest`, or `sha256` in a
    /// JSON body) must be the file's. An answer without it is checked by asking the upload
    /// resource (`HEAD`) and then the receiver's digest lookup. A server that dedupes by
    /// `Idempotency-Key` alone would otherwise acknowledge other bytes stored under the photo's
    /// key, and a server that stores nothing (a captive portal, a wrong URL answering 2xx) would
    /// have the photo marked uploaded. Throws `bad-server-response` when the digests differ and
    /// `unverified-receipt` when no proof can be had, unless `acceptUnverified` (then the
    /// receipt is `unverified`).
    private func verifiedReceipt(for response: HTTPResponse) async throws(TransferError) -> UploadReceipt {
        guard let own = try await completingHeaders().first(where: { $0.name == ResumableUpload.Header.idempotencyKey })?.value else {
            throw TransferError(.invalidRequest, "the upload has no content hash")
        }
        if let stored = Self.storedSHA256Hex(in: response) {
            guard own == stored else {
                throw TransferError(.badServerResponse,
                                    "the server acknowledged an object whose content is not this file's (SHA-256 \(stored.prefix(12))...)")
            }
            return receipt(for: response, proof: .verified)
        }
        if let proof = await proofFromUploadResource(sha256Hex: own) {
            var done = receipt(for: response, proof: .verified)
            done.serverID = done.serverID ?? proof.headers[ResumableUpload.Header.serverResourceID]
            return done
        }
        if let stored = await uploader.alreadyStored(sha256Hex: own) {
            var done = receipt(for: response, proof: .verified)
            done.serverID = done.serverID ?? stored.serverID
            return done
        }
        if configuration.acceptUnverified { return receipt(for: response, proof: .unverified) }
        throw TransferError(.unverifiedReceipt, """
            the server accepted the upload but did not show that it holds these bytes (no Repr-Digest of the stored \
            content in its answer, its upload resource or its digest lookup), so the photo is not marked uploaded. \
            Pass --accept-unverified to accept such answers (marked uploaded-unverified)
            """, httpStatus: response.status, responseHeaders: response.headers)
    }

    /// The upload resource's own answer (`HEAD`), when it says the upload is complete at the
    /// file's length and names this content; nil otherwise or on any failure.
    private func proofFromUploadResource(sha256Hex own: String) async -> HTTPResponse? {
        guard let location else { return nil }
        let request = HTTPRequest(method: "HEAD", url: location, headers: uploader.baseHeaders(interopVersion: interopVersion))
        guard let answer = try? await uploader.client.send(request), (200...299).contains(answer.status),
              ResumableUpload.isComplete(headers: answer.headers) == true,
              answer.headers[ResumableUpload.Header.uploadOffset].flatMap(StructuredField.integer) == size,
              Self.storedSHA256Hex(in: answer) == own else { return nil }
        return answer
    }

    /// The stored object's SHA-256 (lowercase hex) named by a final response, or nil.
    static func storedSHA256Hex(in response: HTTPResponse) -> String? {
        if let field = response.headers[ResumableUpload.Header.reprDigest] {
            return ResumableUpload.sha256(fromReprDigest: field).map(Hex.string)
        }
        struct Body: Decodable { let sha256: String? }
        guard response.headers["content-type"]?.hasPrefix("application/json") == true,
              let body = try? JSONDecoder().decode(Body.self, from: Data(response.body)),
              let hex = body.sha256, let bytes = Hex.bytes(fromHex: hex), bytes.count == 32 else { return nil }
        return hex.lowercased()
    }

    private func receipt(for response: HTTPResponse, proof: ReceiptProof) -> UploadReceipt {
        UploadReceipt(serverID: response.headers[ResumableUpload.Header.serverResourceID], status: response.status,
                      headers: response.headers, bytesSent: bytesSent, location: location, resumable: true, proof: proof,
                      resumedFromOffset: resumedFrom)
    }

    private static func isSingleLine(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
    }
}
