import Foundation
import Synchronization
import SystemSupport
import UploadProtocol

/// Routes each request, checks the bearer token and its scope (`AccessControl`, `TokenScope`),
/// and writes one log line per request (method, path, status, notes, the device's name; never
/// the token or a query). Expired uploads are removed by `ExpirySweeper`, never here.
///
///     GET     /healthz                     200 "ok" (no token needed)
///     OPTIONS /uploads, /, *               200 + Upload-Limit (any token)
///     POST|PUT /uploads, /                 creation (resumable) or plain upload (upload)
///     HEAD|GET /uploads/<id>               offset retrieval (upload)
///     PATCH   /uploads/<id>                append (upload)
///     DELETE  /uploads/<id>                cancellation (upload)
///     GET     /objects                     JSON list of stored objects (read)
///     GET     /objects/<id>                one object's sidecar JSON (read)
///     GET     /objects/<id>/content        the object's bytes (read)
///     HEAD|GET /objects/by-digest/<sha256>  200 + x-server-resource-id when an object has exactly
///                                          that content (64 hex digits), 404 otherwise (upload)
///
/// A token without the scope in brackets gets `403` and a problem body naming it. A request
/// without a valid token gets `401`, or `429` once its address has failed too often
/// (`FailedAuthLimiter`).
///
/// Every answer about an object comes from a file whose stamp is the one recorded when it was
/// hashed, or that was just hashed again (`UploadStore+Integrity.swift`); a corrupt object is
/// moved to `quarantine/` and answers 404.
final class RequestHandler: Sendable {
    private let configuration: ReceiverConfiguration
    private let spaces: AccountSpaces
    private let access: AccessControl
    /// Failed authentications per peer address (`ReceiverConfiguration.failedAuthLimit`).
    private let failedAuth: FailedAuthLimiter
    /// Upload requests in progress per device token id (`ReceiverConfiguration.uploadsPerToken`).
    private let uploadsInProgress = Mutex<[String: Int]>([:])
    /// With `serve --store s3://…`: the bucket every upload and object route goes to
    /// (`RequestHandler+S3.swift`) instead of the account's directory store.
    let bucket: S3Bucket?
    let s3Uploads: S3UploadEndpoint

    init(configuration: ReceiverConfiguration, spaces: AccountSpaces, access: AccessControl) {
        self.configuration = configuration
        bucket = configuration.s3Store.map { S3Bucket(configuration: $0, largestRead: configuration.s3PartSize) }
        s3Uploads = S3UploadEndpoint(configuration: configuration, partSize: configuration.s3PartSize)
        self.spaces = spaces
        self.access = access
        failedAuth = FailedAuthLimiter(limit: configuration.failedAuthLimit, window: configuration.failedAuthWindow,
                                       now: configuration.now)
    }

    /// Answers one request; returns whether the connection may carry another.
    func handle(_ head: HTTPRequestHead, on connection: HTTPConnection) -> Bool {
        let started = ContinuousClock.now
        let exchange: Exchange
        let outcome: Exchange.Outcome
        do throws(HTTPRequestHead.ParseError) {
            let length = try head.contentLength() ?? 0
            exchange = Exchange(head: head, connection: connection, bodyLength: length)
            outcome = route(exchange)
        } catch {
            // A bad framing header: the body boundary is unknown, so answer and close.
            exchange = Exchange(head: head, connection: connection, bodyLength: 0)
            exchange.notes.append(error.reason)
            if connection.send(.text(error.status, error.reason), close: true) { connection.lingerBeforeClose() }
            outcome = Exchange.Outcome(status: error.status, keepAlive: false)
        }
        let elapsed = ContinuousClock.now - started
        let milliseconds = Int(elapsed.milliseconds)
        let status = outcome.status.map(String.init) ?? "---"
        let notes = exchange.notes.isEmpty ? "" : " " + exchange.notes.joined(separator: " ")
        configuration.log("\(head.method) \(Self.loggable(head.path)) \(status)\(notes) \(milliseconds)ms")
        return outcome.keepAlive
    }

    /// Logs a request refused before it could be parsed (no method or path to show).
    func logRefused(_ error: HTTPRequestHead.ParseError) {
        configuration.log("- - \(error.status) \(error.reason)")
    }

    private func route(_ exchange: Exchange) -> Exchange.Outcome {
        let head = exchange.head
        let parts = head.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        if head.method == "GET" && parts == ["healthz"] {
            return exchange.respond(.text(200, "ok"))
        }
        guard let principal = access.principal(authorization: head["authorization"]) else {
            // Closed after the answer, and never a body drained for it: a peer without the token
            // gets no slot time beyond a short linger, and stays evictable until then. Past the
            // failed-authentication limit of its address, the answer is a 429 instead.
            let peer = exchange.connection.peer
            switch failedAuth.fail(peer: peer) {
            case .refused(let seconds):
                exchange.notes.append("unauthorized too-many-failed-authentications peer=\(peer)")
                return exchange.respond(.problem(429, type: ResumableUpload.tooManyFailedAuthenticationsProblem,
                                                 title: "too many failed authentications from this address",
                                                 detail: "this address sent \(failedAuth.limit) requests without a valid bearer token in a short time; "
                                                     + "requests without one are refused for \(seconds) s (requests with a valid token are served)",
                                                 numbers: ["limit": Int64(failedAuth.limit), "window": Int64(failedAuth.window.rounded(.up))],
                                                 headers: [("Retry-After", String(seconds)), ("WWW-Authenticate", "Bearer")]), close: true)
            case .counted(let full):
                exchange.notes.append(full ? "unauthorized peer=\(peer) failed-authentication-limit-reached" : "unauthorized")
                return exchange.respond(.text(401, "a valid bearer token is required",
                                              headers: [("WWW-Authenticate", "Bearer")]), close: true)
            }
        }
        if let device = principal.device { exchange.notes.append("device=\(principal.account)/\(device)") }
        exchange.connection.holdAuthorisedRequest()
        exchange.principal = principal
        exchange.quota = access.quota(for: principal.account)
        if let bucket { return routeS3(exchange, parts: parts, space: S3Space(bucket: bucket, account: principal.account, layout: configuration.layout)) }
        let space: AccountSpaces.Space
        do throws(ReceiverError) {
            space = try spaces.space(for: principal.account)
        } catch {
            return exchange.fail(error)
        }
        let uploads = space.uploads
        switch (head.method, parts.first, parts.count) {
        case ("OPTIONS", _, _) where head.path == "*" || parts.isEmpty || parts == ["uploads"]:
            return options(exchange, uploads: uploads)
        case ("POST", _, _) where parts.isEmpty || parts == ["uploads"],
             ("PUT", _, _) where parts.isEmpty || parts == ["uploads"]:
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            guard beginUpload(principal) else { return tooManyUploads(exchange) }
            defer { endUpload(principal) }
            return exchange.reply(uploads.upload(exchange))
        case (_, _, 0), (_, "uploads", 1):
            return exchange.respond(.text(405, "method not allowed", headers: [("Allow", "OPTIONS, POST, PUT")]))
        case ("HEAD", "uploads", 2), ("GET", "uploads", 2):
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            return exchange.reply(uploads.offset(exchange, id: parts[1]))
        case ("PATCH", "uploads", 2):
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            guard beginUpload(principal) else { return tooManyUploads(exchange) }
            defer { endUpload(principal) }
            return exchange.reply(uploads.patch(exchange, id: parts[1]))
        case ("DELETE", "uploads", 2):
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            return exchange.reply(uploads.cancel(exchange, id: parts[1]))
        case (_, "uploads", 2):
            return exchange.respond(.text(405, "method not allowed", headers: [("Allow", "HEAD, GET, PATCH, DELETE")]))
        case ("GET", "objects", 1), ("HEAD", "objects", 1):
            guard principal.scope.allows(.read) else { return forbidden(exchange, principal, needs: .read) }
            do throws(ReceiverError) {
                var listed: [StoredObject] = []
                for visible in visibleSpaces(space, to: principal) {
                    listed += try visible.store.objects().map { shown($0, in: visible, to: principal) }
                }
                return exchange.respond(json(listed))
            } catch {
                return exchange.fail(error)
            }
        case ("GET", "objects", 3) where parts[1] == "by-digest", ("HEAD", "objects", 3) where parts[1] == "by-digest":
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            return byDigest(exchange, hex: parts[2], store: space.store)
        case ("GET", "objects", 2), ("HEAD", "objects", 2):
            guard principal.scope.allows(.read) else { return forbidden(exchange, principal, needs: .read) }
            guard let (object, holder) = find(parts[1], from: space, for: principal) else {
                return exchange.respond(.text(404, "no such object"))
            }
            return exchange.respond(json(shown(object, in: holder, to: principal)))
        case ("GET", "objects", 3) where parts[2] == "content":
            guard principal.scope.allows(.read) else { return forbidden(exchange, principal, needs: .read) }
            return content(exchange, id: parts[1], from: space)
        default:
            return exchange.respond(.text(404, "not found"))
        }
    }

    /// The `403` for a request outside the token's scope: an RFC 9457 problem whose `detail`
    /// names the scope needed (clients show it), and `WWW-Authenticate` as RFC 6750 says. Asked
    /// before anything about the request's id or digest is looked up, so it tells nothing of them.
    func forbidden(_ exchange: Exchange, _ principal: Principal, needs scope: TokenScope) -> Exchange.Outcome {
        exchange.notes.append("forbidden needs=\(scope.rawValue)")
        let holder = principal.device.map { "device \($0) of account \(principal.account)" } ?? "account \(principal.account)"
        let detail = "this request needs a token with the \(scope.rawValue) scope; the token of \(holder) has the \(principal.scope.rawValue) scope"
        return exchange.respond(.problem(403, type: ResumableUpload.insufficientScopeProblem, title: "the token's scope does not allow this request",
                                         detail: detail, strings: ["scope": scope.rawValue],
                                         headers: [("WWW-Authenticate", "Bearer error=\"insufficient_scope\", scope=\"\(scope.rawValue)\"")]))
    }

    /// Counts an upload request of a device token in, unless the token has
    /// `uploadsPerToken` in progress already. Always true for a principal without a device token.
    func beginUpload(_ principal: Principal) -> Bool {
        guard let id = principal.tokenID else { return true }
        return uploadsInProgress.withLock { counts in
            guard counts[id, default: 0] < configuration.uploadsPerToken else { return false }
            counts[id, default: 0] += 1
            return true
        }
    }

    func endUpload(_ principal: Principal) {
        guard let id = principal.tokenID else { return }
        uploadsInProgress.withLock { counts in
            counts[id, default: 1] -= 1
            if counts[id] == 0 { counts[id] = nil }
        }
    }

    /// The `429` for a device token with `uploadsPerToken` upload requests in progress.
    func tooManyUploads(_ exchange: Exchange) -> Exchange.Outcome {
        exchange.notes.append("too-many-uploads")
        let limit = configuration.uploadsPerToken
        return exchange.respond(.problem(429, type: ResumableUpload.tooManyUploadsProblem, title: "too many uploads in progress for this token",
                                         detail: "this token has \(limit) upload requests in progress, the most one device may have at once; try again when one ends",
                                         numbers: ["limit": Int64(limit)], headers: [("Retry-After", "1")]))
    }

    private func options(_ exchange: Exchange, uploads: UploadEndpoint) -> Exchange.Outcome {
        let version = UploadEndpoint.interopVersion(of: exchange.head) ?? ResumableUpload.supportedInteropVersions.upperBound
        var response = HTTPResponse(status: 200)
        response.add("Upload-Limit", uploads.limits.fieldValue(interopVersion: version))
        response.add("Allow", "OPTIONS, POST, PUT")
        if version >= 8 { response.add("Accept-Patch", ResumableUpload.partialUploadMediaType) }
        return exchange.respond(response)
    }

    /// The spaces whose objects a token may list and read: its own account's, every account's
    /// for an admin.
    private func visibleSpaces(_ own: AccountSpaces.Space, to principal: Principal) -> [AccountSpaces.Space] {
        principal.scope == .admin ? spaces.all : [own]
    }

    /// The object with that id in a space the token may read, and that space; nil when none holds
    /// it (another account's answers exactly as an id that was never stored).
    private func find(_ id: String, from own: AccountSpaces.Space,
                      for principal: Principal) -> (StoredObject, AccountSpaces.Space)? {
        for space in visibleSpaces(own, to: principal) {
            if let object = space.store.verifiedObject(id) { return (object, space) }
        }
        return nil
    }

    /// An object as answered: with its account named when a device token asks (admins see
    /// several accounts); as stored otherwise, as before accounts existed.
    private func shown(_ object: StoredObject, in space: AccountSpaces.Space, to principal: Principal) -> StoredObject {
        guard principal.tokenID != nil else { return object }
        var shown = object
        shown.account = space.account
        return shown
    }

    /// The hash pre-check: whether an object with this content is stored in the token's account,
    /// so a client can skip sending bytes it already holds. Answers with the object's id and its
    /// `Repr-Digest`; another account's object answers as content never stored.
    private func byDigest(_ exchange: Exchange, hex: String, store: UploadStore) -> Exchange.Outcome {
        let lowered = hex.lowercased()
        guard lowered.utf8.count == 64, let digest = Hex.bytes(fromHex: lowered) else {
            return exchange.respond(.text(400, "the digest is not 64 hex digits"))
        }
        guard let object = store.object(sha256Hex: lowered) else {
            exchange.notes.append("digest-miss")
            return exchange.respond(.text(404, "no object with that digest"))
        }
        exchange.notes.append("digest-hit")
        var response = json(object)
        response.add(ResumableUpload.Header.serverResourceID, object.id)
        response.add(ResumableUpload.Header.reprDigest, ResumableUpload.reprDigest(sha256: digest))
        return exchange.respond(response)
    }

    private func content(_ exchange: Exchange, id: String, from own: AccountSpaces.Space) -> Exchange.Outcome {
        guard let (object, space) = find(id, from: own, for: exchange.principal) else {
            return exchange.respond(.text(404, "no such object"))
        }
        let store = space.store
        if exchange.bodyRemaining > 0 { return exchange.respond(.text(400, "GET carries no body")) }
        let response = HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")])
        let sent = exchange.connection.sendFile(response, path: store.contentPath(of: object), length: object.size,
                                                  close: !exchange.head.keepAlive)
        return Exchange.Outcome(status: 200, keepAlive: sent && exchange.head.keepAlive)
    }

    func json(_ value: some Encodable) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
                     body: UploadStore.json(value))
    }

    /// The path as logged: at most 200 characters (already printable ASCII; the query was dropped).
    private static func loggable(_ path: String) -> String {
        path.count > 200 ? String(path.prefix(200)) + "…" : path
    }
}
