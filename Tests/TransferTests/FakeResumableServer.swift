import Foundation
import Synchronization
import Transfer
import UploadProtocol

/// A small in-memory resumable-upload server for the client tests: HTTP/1.1 on a loopback socket,
/// one thread per connection, keep-alive. It implements just enough of the protocol (interop 3..8)
/// to exercise the client and can be told to misbehave: answer discovery in several ways, skip
/// the 104, drop the connection part-way through a body, answer 409, 413 or any status, or lose an
/// upload. It records every request it saw.
final class FakeResumableServer: Sendable {
    /// How OPTIONS is answered.
    enum Discovery: Sendable {
        /// 200 with this `Upload-Limit` value.
        case limits(String)
        /// 200 with no `Upload-Limit`.
        case missing
        /// Only this status.
        case status(Int)
        /// 200 with an HTML login page, as a captive portal answers every request.
        case webPage
    }

    /// Knobs a test sets before (or between) uploads.
    struct Behaviour: Sendable {
        var discovery: Discovery = .limits("max-size=1000000000")
        /// Send `104` (with Location and the echoed version) on creations carrying the whole body.
        var sendInterim = true
        /// Echo this version in the 104 instead of the request's.
        var interimVersionOverride: String?
        /// Send the 104 with `Location` alone, as a receiver written from the platform's article does.
        var interimLocationOnly = false
        /// Name upload resources (in the 104 and the creation's answer) on this origin
        /// (`http://127.0.0.1:PORT`) instead of by a path on this server's own.
        var locationOrigin: String?
        /// For the next body-carrying upload requests, in order: drop the connection after this
        /// many body bytes (nil entries: no drop).
        var dropAfterBodyBytes: [Int?] = []
        /// The next PATCH requests are answered with these statuses (body read, nothing stored).
        var patchStatuses: [Int] = []
        /// The next HEAD requests are answered with these statuses.
        var headStatuses: [Int] = []
        /// Sent with every status forced by `headStatuses`.
        var forcedHeadHeaders: [(String, String)] = []
        /// The next creation requests are answered with these statuses.
        var creationStatuses: [Int] = []
        /// PATCH bodies larger than this are refused with 413 (not announced in Upload-Limit).
        var hiddenMaxAppendSize: Int?
        /// Sent in `Upload-Limit` on creation responses.
        var creationLimits: String?
        /// Omit Location from the careful creation's 201.
        var omitCreationLocation = false
        /// When set, requests without `Authorization: Bearer <token>` get 401.
        var requiredToken: String?
        /// Requests with these methods are read but never answered, until the client gives up.
        var stallMethods: Set<String> = []
        /// Sent as `Repr-Digest` on every answer that completes an upload: the digest of the object
        /// the server says it kept (a server that deduped to other bytes stored under the key).
        /// Without it the digest of the bytes it really stored is sent, as `photodrain serve` does.
        var completionReprDigest: String?
        /// Send no `Repr-Digest` at all: a server that gives the client no proof of receipt.
        var omitReprDigest = false
        /// Answer every completing request `201` with `Upload-Complete: ?0` and `Upload-Offset: 0`,
        /// storing nothing: a server whose acknowledgement contradicts itself.
        var lieIncomplete = false
        /// Sent with every status forced by `patchStatuses` or `creationStatuses`.
        var forcedStatusHeaders: [(String, String)] = []
        /// The next this many requests that complete an upload keep it and close the connection
        /// without answering (the answer lost on the way back).
        var loseCompletionAnswers = 0
    }

    /// One request as received.
    struct RecordedRequest: Sendable {
        var method: String
        var path: String
        var headers: [String: String]
        var bodyBytesReceived: Int
    }

    private struct Upload {
        var bytes: [UInt8] = []
        var complete = false
        var interopVersion: Int?
        var objectID: String?
    }

    private struct State {
        var behaviour: Behaviour
        var uploads: [String: Upload] = [:]
        /// Finished objects by server id.
        var objects: [String: [UInt8]] = [:]
        var requests: [RecordedRequest] = []
        var bodyBytesReceived = 0
        var connectionsAccepted = 0
        var nextID = 1
        /// Connections still open, closed by `stop()`.
        var open: [ObjectIdentifier: TestSocket] = [:]
        var stopped = false
    }

    private let state: Mutex<State>
    private let listener: TestSocket
    /// The port on 127.0.0.1.
    let port: UInt16

    /// Starts listening; nil if no loopback socket could be opened.
    init?(behaviour: Behaviour = Behaviour()) {
        guard let (listener, port) = TestSocket.listenOnLoopback() else { return nil }
        self.listener = listener
        self.port = port
        self.state = Mutex(State(behaviour: behaviour))
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    /// The upload endpoint.
    var endpoint: String { "http://127.0.0.1:\(port)/files" }

    /// Stops accepting connections and ends every connection still open.
    func stop() {
        // Shut down, not closed: the accept loop and each connection's thread close their own
        // sockets once woken (see `TestSocket.close`).
        let open = state.withLock { state in
            state.stopped = true
            return Array(state.open.values)
        }
        listener.shutdown()
        for connection in open { connection.shutdown() }
    }

    /// Changes the behaviour.
    func configure(_ change: (inout Behaviour) -> Void) { state.withLock { change(&$0.behaviour) } }

    /// Every request so far.
    var requests: [RecordedRequest] { state.withLock { $0.requests } }
    /// Connections accepted so far.
    var connectionsAccepted: Int { state.withLock { $0.connectionsAccepted } }
    /// Body bytes received so far, over all requests.
    var bodyBytesReceived: Int { state.withLock { $0.bodyBytesReceived } }
    /// The finished objects by server id.
    var objects: [String: [UInt8]] { state.withLock { $0.objects } }
    /// The bytes an upload resource holds, by its path.
    func uploadBytes(path: String) -> [UInt8]? { state.withLock { $0.uploads[path]?.bytes } }
    /// Forgets an upload resource (as an expiring server would).
    func forgetUploads() { state.withLock { $0.uploads.removeAll() } }

    // MARK: Serving

    private func acceptLoop() {
        while let connection = listener.accept() {
            let accepted = state.withLock { state in
                guard !state.stopped else { return false }
                state.connectionsAccepted += 1
                state.open[ObjectIdentifier(connection)] = connection
                return true
            }
            guard accepted else {
                connection.close()
                continue
            }
            let thread = Thread { [self] in self.serve(connection) }
            thread.start()
        }
        listener.close()
    }

    private func serve(_ connection: TestSocket) {
        defer {
            state.withLock { _ = $0.open.removeValue(forKey: ObjectIdentifier(connection)) }
            connection.close()
        }
        var reader = RequestReader(socket: connection)
        while let head = reader.readHead() {
            guard handle(head, reader: &reader, connection: connection) else { return }
        }
    }

    /// Handles one request; false when the connection must close.
    private func handle(_ head: RequestHead, reader: inout RequestReader, connection: TestSocket) -> Bool {
        let index = state.withLock { state in
            state.requests.append(RecordedRequest(method: head.method, path: head.path, headers: head.headers, bodyBytesReceived: 0))
            return state.requests.count - 1
        }
        let contentLength = Int(head.headers["content-length"] ?? "0") ?? 0
        let version = head.headers[ResumableUpload.Header.interopVersion].flatMap { Int($0) }
        let behaviour = state.withLock { $0.behaviour }

        if behaviour.stallMethods.contains(head.method) {
            // Hold the request open until the client closes the connection.
            while !connection.read(maxCount: 64 * 1024).isEmpty {}
            return false
        }
        if let token = behaviour.requiredToken, head.headers["authorization"] != "Bearer \(token)" {
            _ = drainBody(contentLength, reader: &reader, index: index, drop: nil)
            return respond(connection, status: 401, headers: [])
        }

        switch (head.method, head.path) {
        case ("OPTIONS", _):
            switch behaviour.discovery {
            case .limits(let value): return respond(connection, status: 200, headers: [("Upload-Limit", value)])
            case .missing: return respond(connection, status: 200, headers: [])
            case .status(let status): return respond(connection, status: status, headers: behaviour.forcedStatusHeaders)
            case .webPage:
                let page = Array("<!DOCTYPE html><html><body>Log in to continue</body></html>".utf8)
                return respond(connection, status: 200, headers: [("Content-Type", "text/html; charset=utf-8")], body: page)
            }
        case ("POST", "/files"), ("PUT", "/files"):
            return create(head, version: version, contentLength: contentLength, reader: &reader, connection: connection, index: index)
        case ("HEAD", let path):
            if let status = state.withLock({ $0.behaviour.headStatuses.isEmpty ? nil : $0.behaviour.headStatuses.removeFirst() }) {
                return respond(connection, status: status, headers: behaviour.forcedHeadHeaders)
            }
            guard let upload = state.withLock({ $0.uploads[path] }) else { return respond(connection, status: 404, headers: []) }
            let completion = ResumableUpload.completionHeader(complete: upload.complete, interopVersion: version ?? 8)
            var headers = [("Upload-Offset", String(upload.bytes.count)), (completion.name, completion.value), ("Cache-Control", "no-store")]
            if let id = upload.objectID {
                headers.append(("X-Server-Resource-ID", id))
                // As `photodrain serve` does: a completed upload's HEAD names the stored object's digest.
                if let digest = reprDigest(of: state.withLock({ $0.objects[id] }) ?? []) { headers.append(("Repr-Digest", digest)) }
            }
            return respond(connection, status: 204, headers: headers)
        case ("PATCH", let path):
            return append(head, path: path, version: version, contentLength: contentLength, reader: &reader,
                          connection: connection, index: index)
        case ("DELETE", let path):
            let existed = state.withLock { $0.uploads.removeValue(forKey: path) != nil }
            return respond(connection, status: existed ? 204 : 404, headers: [])
        default:
            _ = drainBody(contentLength, reader: &reader, index: index, drop: nil)
            return respond(connection, status: 405, headers: [])
        }
    }

    private func create(_ head: RequestHead, version: Int?, contentLength: Int, reader: inout RequestReader,
                        connection: TestSocket, index: Int) -> Bool {
        let complete = ResumableUpload.isComplete(headers: head.headers)
        let forced = state.withLock { $0.behaviour.creationStatuses.isEmpty ? nil : $0.behaviour.creationStatuses.removeFirst() }
        if let forced {
            _ = drainBody(contentLength, reader: &reader, index: index, drop: nil)
            return respond(connection, status: forced, headers: state.withLock { $0.behaviour.forcedStatusHeaders })
        }
        let drop = contentLength > 0 ? nextDrop() : nil
        guard let complete, let version else {
            // A plain upload: store the whole body as an object.
            guard let body = drainBody(contentLength, reader: &reader, index: index, drop: drop) else { return false }
            let id = state.withLock { state in
                let id = "obj-\(state.nextID)"
                state.nextID += 1
                state.objects[id] = body
                return id
            }
            let digest = reprDigest(of: body)
            return respond(connection, status: 201, headers: [("X-Server-Resource-ID", id)] + (digest.map { [("Repr-Digest", $0)] } ?? []))
        }
        let (path, behaviour) = state.withLock { state in
            let path = "/files/u\(state.nextID)"
            state.nextID += 1
            state.uploads[path] = Upload(interopVersion: version)
            return (path, state.behaviour)
        }
        if complete && behaviour.sendInterim {
            let echoed = behaviour.interimVersionOverride ?? String(version)
            let named = (behaviour.locationOrigin ?? "") + path
            let interim = behaviour.interimLocationOnly
                ? "HTTP/1.1 104 Upload Resumption Supported\r\nLocation: \(named)\r\n\r\n"
                : "HTTP/1.1 104 Upload Resumption Supported\r\nLocation: \(named)\r\nUpload-Draft-Interop-Version: \(echoed)\r\n\r\n"
            guard connection.write(Array(interim.utf8)) else { return false }
        }
        let body = drainBody(contentLength, reader: &reader, index: index, drop: drop, storeInto: path)
        guard let body else { return false }
        _ = body
        return finishRequest(path: path, complete: complete, version: version, connection: connection,
                             creation: true, omitLocation: behaviour.omitCreationLocation && !complete,
                             limits: behaviour.creationLimits)
    }

    private func append(_ head: RequestHead, path: String, version: Int?, contentLength: Int, reader: inout RequestReader,
                        connection: TestSocket, index: Int) -> Bool {
        let (upload, forced, hiddenMax) = state.withLock { state in
            (state.uploads[path],
             state.behaviour.patchStatuses.isEmpty ? nil : state.behaviour.patchStatuses.removeFirst(),
             state.behaviour.hiddenMaxAppendSize)
        }
        guard let upload else {
            _ = drainBody(contentLength, reader: &reader, index: index, drop: nil)
            return respond(connection, status: 404, headers: [])
        }
        if let forced {
            _ = drainBody(contentLength, reader: &reader, index: index, drop: nil)
            return respond(connection, status: forced, headers: state.withLock { $0.behaviour.forcedStatusHeaders })
        }
        let claimed = head.headers["upload-offset"].flatMap { Int($0) }
        if claimed != upload.bytes.count {
            _ = drainBody(contentLength, reader: &reader, index: index, drop: nil)
            let completion = ResumableUpload.completionHeader(complete: false, interopVersion: version ?? 8)
            return respond(connection, status: 409, headers: [("Upload-Offset", String(upload.bytes.count)), (completion.name, completion.value)])
        }
        if let hiddenMax, contentLength > hiddenMax {
            _ = drainBody(contentLength, reader: &reader, index: index, drop: nil)
            return respond(connection, status: 413, headers: [])
        }
        let drop = contentLength > 0 ? nextDrop() : nil
        guard drainBody(contentLength, reader: &reader, index: index, drop: drop, storeInto: path) != nil else { return false }
        let complete = ResumableUpload.isComplete(headers: head.headers) ?? false
        return finishRequest(path: path, complete: complete, version: version, connection: connection,
                             creation: false, omitLocation: false, limits: nil)
    }

    private func finishRequest(path: String, complete: Bool, version: Int?, connection: TestSocket, creation: Bool,
                               omitLocation: Bool, limits: String?) -> Bool {
        if complete, state.withLock({ $0.behaviour.lieIncomplete }) {
            // Takes the bytes, keeps none, and says so in a 201.
            state.withLock { $0.uploads[path]?.bytes = [] }
            let completion = ResumableUpload.completionHeader(complete: false, interopVersion: version ?? 8)
            var headers: [(String, String)] = [("Upload-Offset", "0"), (completion.name, completion.value)]
            if creation && !omitLocation { headers.append(("Location", (state.withLock { $0.behaviour.locationOrigin } ?? "") + path)) }
            return respond(connection, status: 201, headers: headers)
        }
        let (offset, id) = state.withLock { state -> (Int, String?) in
            guard var upload = state.uploads[path] else { return (0, nil) }
            var id: String?
            if complete {
                upload.complete = true
                let objectID = "obj-\(state.nextID)"
                state.nextID += 1
                state.objects[objectID] = upload.bytes
                upload.objectID = objectID
                id = objectID
            }
            state.uploads[path] = upload
            return (upload.bytes.count, id)
        }
        if id != nil, state.withLock({ state in
            guard state.behaviour.loseCompletionAnswers > 0 else { return false }
            state.behaviour.loseCompletionAnswers -= 1
            return true
        }) {
            return false
        }
        let completion = ResumableUpload.completionHeader(complete: complete, interopVersion: version ?? 8)
        var headers: [(String, String)] = [("Upload-Offset", String(offset)), (completion.name, completion.value)]
        if !omitLocation && creation { headers.append(("Location", (state.withLock { $0.behaviour.locationOrigin } ?? "") + path)) }
        if let limits { headers.append(("Upload-Limit", limits)) }
        if let id { headers.append(("X-Server-Resource-ID", id)) }
        if let id, let digest = reprDigest(of: state.withLock({ $0.objects[id] }) ?? []) { headers.append(("Repr-Digest", digest)) }
        return respond(connection, status: creation || complete ? 201 : 204, headers: headers)
    }

    /// The `Repr-Digest` a completing answer carries: the override, the stored bytes' digest, or none.
    private func reprDigest(of stored: [UInt8]) -> String? {
        let behaviour = state.withLock { $0.behaviour }
        if behaviour.omitReprDigest { return nil }
        if let override = behaviour.completionReprDigest { return override }
        return (try? FileDigest.sha256(bytes: stored)).map { ResumableUpload.reprDigest(sha256: $0) }
    }

    private func nextDrop() -> Int? {
        state.withLock { state in
            state.behaviour.dropAfterBodyBytes.isEmpty ? nil : state.behaviour.dropAfterBodyBytes.removeFirst()
        }
    }

    /// Reads the body, appending to an upload resource as it arrives; nil when the connection
    /// broke or was dropped on purpose after `drop` bytes.
    private func drainBody(_ length: Int, reader: inout RequestReader, index: Int, drop: Int?,
                           storeInto path: String? = nil) -> [UInt8]? {
        var received: [UInt8] = []
        var remaining = length
        let limit = drop.map { min($0, length) } ?? length
        while received.count < limit {
            let chunk = reader.readBody(maxCount: min(64 * 1024, limit - received.count))
            if chunk.isEmpty { return nil }
            received += chunk
            remaining -= chunk.count
            state.withLock { state in
                state.bodyBytesReceived += chunk.count
                state.requests[index].bodyBytesReceived += chunk.count
                if let path { state.uploads[path]?.bytes += chunk }
            }
        }
        if drop != nil { return nil }
        return received
    }

    private func respond(_ connection: TestSocket, status: Int, headers: [(String, String)], body: [UInt8] = []) -> Bool {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if status != 204 && status >= 200 { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return connection.write(Array(text.utf8) + body)
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 401: return "Unauthorized"
        case 404: return "Not Found"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        default: return "Status"
        }
    }
}
