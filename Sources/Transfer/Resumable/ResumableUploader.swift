import SystemSupport
import UploadProtocol

/// Uploads files with the IETF resumable-upload protocol (interop 3...8), falling back to a
/// plain upload when discovery says the server does not support it. One uploader serves many
/// files and many concurrent calls; it shares one HTTP client (so connections are reused) and one
/// discovery cache.
///
/// ```swift
/// let uploader = ResumableUploader(configuration: UploadConfiguration(endpoint: url, token: BearerToken(text)))
/// let receipt = try await uploader.upload(file: path, metadata: try UploadMetadata(file: path, verdictJSON: json),
///                                         resumeFrom: savedCheckpoint, checkpoint: { try store.save($0) })
/// ```
public final class ResumableUploader: Sendable {
    /// The destination and tuning.
    public let configuration: UploadConfiguration
    let client: HTTPClient
    private let discoveryCache: DiscoveryCache

    /// Creates an uploader. Pass a `client` or `discoveryCache` to share them with other uploaders.
    public init(configuration: UploadConfiguration, client: HTTPClient? = nil, discoveryCache: DiscoveryCache = DiscoveryCache()) {
        self.configuration = configuration
        self.client = client ?? HTTPClient(options: configuration.http)
        self.discoveryCache = discoveryCache
    }

    /// Uploads the file at `path` and returns the server's acknowledgement.
    ///
    /// With `resumeFrom`, first asks the saved upload resource for its offset and continues from
    /// there (a resource the server no longer knows is started over). `checkpoint` is called with
    /// the upload URL before the first body byte of a careful creation and after every offset the
    /// server acknowledges; persist it to resume in another process. `progress` sees acknowledged
    /// offsets only. Throws `TransferError`, classified transient, permanent or deferred (cancelled).
    public func upload(file path: String, metadata: UploadMetadata, resumeFrom: UploadCheckpoint? = nil,
                       progress: @escaping (UploadProgress) -> Void = { _ in },
                       checkpoint: @escaping (UploadCheckpoint) throws -> Void = { _ in }) async throws(TransferError) -> UploadReceipt {
        try configuration.validate()
        // The pre-check comes after discovery: only a receiver's lookup answer counts, and a
        // destination that refuses (401, a web page) is told now, as the upload would tell it.
        if resumeFrom == nil, configuration.hashPreCheck, case .resumable = try await discover(),
           let stored = await alreadyStored(sha256Hex: metadata.sha256Hex) {
            return stored
        }
        let session = try UploadSession(uploader: self, path: path, filename: metadata.filenameBytes ?? Array(metadata.filename.utf8),
                                        verdictJSON: metadata.verdictJSON, provenance: metadata.provenance,
                                        digest: .known(metadata.sha256Hex),
                                        interopVersion: resumeFrom.map(\.interopVersion) ?? configuration.interopVersion,
                                        progress: progress, checkpoint: checkpoint)
        return try await session.run(resumeFrom: resumeFrom)
    }

    /// Uploads the file at `path` while `digest` is still hashing it, so the bytes start flowing
    /// at once: requests that cannot complete the upload go without `Idempotency-Key` and
    /// `Repr-Digest`, and the completing one (the whole file for a small file or a plain server;
    /// the last `UploadSession.deferredDigestTail` bytes of a large one) waits for the digest and
    /// carries it. The server checks the digest and dedupes when the upload completes. The bytes
    /// the appends send are hashed on the way, so a `digest` created with `startingNow: false`
    /// runs only if that cannot give the digest (a small file sent whole, a plain server, a resume
    /// from a saved checkpoint). Otherwise
    /// as `upload(file:metadata:resumeFrom:progress:checkpoint:)`, with `filename` and
    /// `verdictJSON` as in `UploadMetadata` and `provenance` sent as its `X-Photo-*` headers. `onBodySent` is called (on a transfer thread) each
    /// time a request has handed its whole body to the connection; `photodrain upload` starts
    /// hashing the next file then. Throws `TransferError` (`file-unreadable` when the digest could
    /// not be computed).
    public func upload(file path: String, filename: String, verdictJSON: String, provenance: Provenance? = nil,
                       digest: BackgroundDigest,
                       resumeFrom: UploadCheckpoint? = nil, progress: @escaping (UploadProgress) -> Void = { _ in },
                       checkpoint: @escaping (UploadCheckpoint) throws -> Void = { _ in },
                       onBodySent: (@Sendable () -> Void)? = nil) async throws(TransferError) -> UploadReceipt {
        try configuration.validate()
        // The pre-check needs the digest. A file sent whole waits for it before its first byte
        // anyway; a larger one is pre-checked only if it is already known, so its bytes start at once.
        // It comes after discovery: only a receiver's lookup answer counts (see `alreadyStored`).
        if resumeFrom == nil, configuration.hashPreCheck, case .resumable = try await discover() {
            var hex = try? digest.sha256HexIfFinished()
            if hex == nil, let size = try? ReadOnlyFile(path: path).size(), size <= configuration.optimisticCreationLimit {
                hex = try? await digest.sha256Hex()
            }
            if let hex, let stored = await alreadyStored(sha256Hex: hex) { return stored }
        }
        let session = try UploadSession(uploader: self, path: path, filename: Array(filename.utf8), verdictJSON: verdictJSON,
                                        provenance: provenance, digest: .pending(digest),
                                        interopVersion: resumeFrom.map(\.interopVersion) ?? configuration.interopVersion,
                                        progress: progress, checkpoint: checkpoint, onBodySent: onBodySent)
        return try await session.run(resumeFrom: resumeFrom)
    }

    /// Asks the endpoint's origin whether it speaks the resumable protocol (`OPTIONS`), reusing a
    /// cached answer while it is fresh (`refresh` asks again regardless). A 2xx with a valid
    /// `Upload-Limit` (a dictionary, or the bare number of the platform's article) is resumable;
    /// a 501 (or another 4xx than 401/403/408/429), or a missing or malformed `Upload-Limit`, is
    /// plain. Throws `TransferError` when no answer could be had (transient), for 401/403, and
    /// `not-a-receiver` for a redirect or an HTML page (a captive portal or a wrong URL).
    public func discover(refresh: Bool = false) async throws(TransferError) -> UploadCapability {
        try configuration.validate()
        guard let origin = UploadEndpoint.origin(of: configuration.endpoint) else {
            throw TransferError(.invalidRequest, "the destination is not an absolute http(s) URL")
        }
        if !refresh, let cached = discoveryCache.capability(for: origin) { return cached }
        let request = HTTPRequest(method: "OPTIONS", url: configuration.endpoint,
                                  headers: baseHeaders(interopVersion: configuration.interopVersion))
        let response = try await client.send(request)
        // A captive portal or a wrong URL answers like a web page: no upload should go there.
        if let error = ReceiverAnswer.webPageError(response, url: configuration.endpoint) { throw error }
        let capability: UploadCapability
        switch response.status {
        case 200...299:
            if let field = response.headers[ResumableUpload.Header.uploadLimit],
               let limits = UploadLimits(fieldValue: field) {
                capability = .resumable(limits)
            } else {
                capability = .plain
            }
        case 404 where !configuration.acceptUnverified:
            // Only a plain upload could go on, and only with --accept-unverified: say what is wrong.
            throw TransferError(.notFound, "the upload endpoint does not exist (OPTIONS answered 404)", httpStatus: 404)
        case 401, 403, 408, 429, 500, 502...599:
            // Every header is kept on the failed job (a request id, a Retry-After that says when
            // to try again), as for a success.
            throw TransferError.forStatus(response.status, headers: response.headers, body: response.body)
        default:
            capability = .plain
        }
        discoveryCache.store(capability, for: origin, lifetime: configuration.discoveryLifetime)
        return capability
    }

    /// The hash pre-check: asks the receiver (`HEAD <base>/objects/by-digest/<sha256>`) whether
    /// it already stores an object with this content, and returns a receipt for that object (no
    /// bytes sent, `alreadyStored`) when it answers 200 with `x-server-resource-id` and a
    /// `Repr-Digest` naming this content (the proof of receipt `photodrain verify` also relies on). Any other answer or a failed exchange is nil: the
    /// caller uploads as usual, so a receiver without the route still gets the file.
    ///
    /// The lookup is asked only of a destination that has answered discovery as a receiver
    /// (`discover()` says `.resumable`, from the cache when fresh): a server that answers 200 and
    /// the digest to any lookup, without speaking the protocol, would otherwise have every photo
    /// marked uploaded without a byte sent. For any other destination (plain, or no answer) it is nil.
    public func alreadyStored(sha256Hex: String) async -> UploadReceipt? {
        guard case .resumable? = try? await discover() else { return nil }
        guard let digest = Hex.bytes(fromHex: sha256Hex), digest.count == 32,
              let url = UploadEndpoint.digestLookup(for: configuration.endpoint, sha256Hex: sha256Hex) else { return nil }
        let request = HTTPRequest(method: "HEAD", url: url, headers: baseHeaders(interopVersion: configuration.interopVersion))
        guard let response = try? await client.send(request), response.status == 200,
              let id = response.headers[ResumableUpload.Header.serverResourceID], !id.isEmpty else { return nil }
        // The answer must name this content: a receiver that answers 200 to any path (a web
        // server, a captive portal) would otherwise say it holds every photo.
        guard let field = response.headers[ResumableUpload.Header.reprDigest],
              ResumableUpload.sha256(fromReprDigest: field) == digest else { return nil }
        return UploadReceipt(serverID: id, status: response.status, headers: response.headers, bytesSent: 0,
                             location: nil, resumable: false, alreadyStored: true)
    }

    /// Cancels a resumable upload (`DELETE` on its URL). A 2xx or 404 both mean the resource is
    /// gone. Throws `TransferError` for any other answer or a failed exchange, and `not-a-receiver`
    /// (nothing sent) for an upload URL on another origin than the destination's.
    public func cancel(_ checkpoint: UploadCheckpoint) async throws(TransferError) {
        let target = try UploadEndpoint.onDestinationOrigin(checkpoint.location, destination: configuration.endpoint,
                                                            source: "the saved upload to cancel")
        let request = HTTPRequest(method: "DELETE", url: target,
                                  headers: baseHeaders(interopVersion: checkpoint.interopVersion))
        let response = try await client.send(request)
        guard (200...299).contains(response.status) || response.status == 404 || response.status == 410 else {
            throw TransferError.forStatus(response.status)
        }
    }

    /// The headers every request carries: the interop version and, when configured, the token.
    func baseHeaders(interopVersion: Int) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [(ResumableUpload.Header.interopVersion, String(interopVersion))]
        if let token = configuration.token {
            headers.append((ResumableUpload.Header.authorization, token.headerValue))
        }
        return headers
    }
}

extension ResumableUploader: UploadDestination {
    /// The upload endpoint URL.
    public var endpoint: String { configuration.endpoint }

    /// Runs discovery (`OPTIONS`), never from the cache; any HTTP answer means reachable.
    public func checkReachable() async throws(TransferError) {
        // Always on the wire: a cached capability says nothing about whether the server is up now.
        _ = try await discover(refresh: true)
    }

    /// The stored upload URL with the confirmed offset and the configured interop version.
    public func checkpoint(restoring stored: String, confirmedOffset: Int64) -> UploadCheckpoint? {
        UploadCheckpoint(storedForm: stored, confirmedOffset: confirmedOffset, interopVersion: configuration.interopVersion)
    }
}
