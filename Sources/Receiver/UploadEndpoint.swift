#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SystemSupport
import UploadProtocol

/// The upload side of the receiver: plain uploads, and the server side of "Resumable Uploads for
/// HTTP" for interop versions 3 to 8 (creation with 104, offset retrieval, append, cancellation).
struct UploadEndpoint: Sendable {
    let configuration: ReceiverConfiguration
    let store: UploadStore
    let registry: TransferRegistry
    /// Running digests handed from one append of an upload to the next.
    let digests = PartialDigests()

    private typealias Header = ResumableUpload.Header

    private var faults: FaultInjection? { configuration.faultInjection }

    /// The `Upload-Limit` this receiver announces.
    var limits: UploadLimits {
        UploadLimits(maxSize: configuration.maxSize, maxAge: Int64(configuration.partialTTL))
    }

    /// The request's interop version when it is one this receiver speaks (3...8), else nil: a
    /// missing or unknown version makes the request a plain one.
    static func interopVersion(of head: HTTPRequestHead) -> Int? {
        guard let text = head[Header.interopVersion], let n = StructuredField.integer(text),
              ResumableUpload.supportedInteropVersions.contains(Int(n)) else { return nil }
        return Int(n)
    }

    // MARK: POST/PUT on the upload target

    /// A creation request (completion header present, known version) or a plain upload.
    func upload(_ exchange: Exchange) -> Exchange.Reply {
        let head = exchange.head
        let metadata: ObjectMetadata
        switch Self.metadata(of: head) {
        case .success(let parsed): metadata = parsed
        case .failure(let problem): return .response(.text(400, problem.reason))
        }
        if let version = Self.interopVersion(of: head), let field = Self.completionField(head, version: version) {
            guard let complete = field else {
                return .response(.text(400, "malformed \(Self.completionName(version))"))
            }
            return create(exchange, version: version, complete: complete, metadata: metadata)
        }
        return plainUpload(exchange, metadata: metadata)
    }

    private func plainUpload(_ exchange: Exchange, metadata: ObjectMetadata) -> Exchange.Reply {
        guard exchange.head["content-length"] != nil else {
            return .response(.text(411, "a plain upload needs Content-Length"))
        }
        if exchange.bodyLength > configuration.maxSize { return .response(.text(413, "larger than max-size")) }
        let staging = store.stagingPath()
        let fd: Int32
        do throws(ReceiverError) {
            fd = try Syscalls.open(staging, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        } catch {
            return .failure(error)
        }
        defer { try? Syscalls.unlinkIfPresent(staging) }
        exchange.continueIfExpected()
        let complete: Bool
        var hasher = try? SHA256()  // nil: the digest is read back from the stored file instead
        do throws(ReceiverError) {
            defer { Syscalls.closeDescriptor(fd) }
            var written: Int64 = 0
            let result = try exchange.connection.readBody(length: exchange.bodyLength) { bytes throws(ReceiverError) in
                let admission = faults?.admit(bytes.count, at: written) ?? .init(allowed: bytes.count)
                let accepted = UnsafeRawBufferPointer(rebasing: bytes[0..<admission.allowed])
                try Syscalls.writeAll(fd, accepted, context: staging)
                do { try hasher?.update(accepted) } catch { hasher = nil }
                written += Int64(admission.allowed)
                if let failure = admission.failure { throw failure }
                return !admission.cut
            }
            exchange.bodyRemaining -= result.received
            complete = result.complete
            if complete { try Syscalls.fsync(fd, context: staging) }
        } catch {
            return .failure(error)
        }
        guard complete else {
            exchange.notes.append("body interrupted")
            return .drop
        }
        return finish(exchange, stagedPath: staging, size: exchange.bodyLength, metadata: metadata, sha256: try? hasher?.finish(),
                      location: nil) {
            $0.add("Location", "/objects/\($1.id)")
        }
    }

    private func create(_ exchange: Exchange, version: Int, complete: Bool, metadata: ObjectMetadata) -> Exchange.Reply {
        let head = exchange.head
        let contentLength = exchange.bodyLength
        var uploadLength: Int64?
        if let text = head[Header.uploadLength] {
            guard let n = StructuredField.integer(text), n >= 0 else {
                return .response(.text(400, "malformed Upload-Length"))
            }
            uploadLength = n
        }
        if contentLength > configuration.maxSize || (uploadLength ?? 0) > configuration.maxSize {
            return .response(.text(413, "larger than max-size"))
        }
        if let uploadLength, complete ? uploadLength != contentLength : contentLength > uploadLength {
            return .response(problem(400, type: ResumableUpload.inconsistentLengthProblem,
                                            title: "Upload-Length does not match the content", version: version))
        }
        let record: UploadRecord
        do throws(ReceiverError) {
            record = try store.createUpload(interopVersion: version, length: complete ? contentLength : uploadLength,
                                            metadata: metadata, now: configuration.now())
        } catch {
            return .failure(error)
        }
        exchange.notes.append("upload=\(record.id)")
        guard registry.acquire(record.id, descriptor: exchange.connection.descriptor, timeout: configuration.ioTimeout) else {
            return .failure(ReceiverError(code: .io, message: "upload slot busy"))
        }
        defer { registry.release(record.id) }

        let location = Self.location(of: record.id)
        if exchange.takesInterimResponses {
            var interim = HTTPResponse(status: ResumableUpload.uploadResumptionSupported)
            interim.add("Location", location)
            interim.add("Upload-Draft-Interop-Version", String(version))
            if version >= 6 { interim.add("Upload-Limit", limits.fieldValue(interopVersion: version)) }
            exchange.sendInterim(interim)
            exchange.sentInterim = true
        }
        exchange.continueIfExpected()

        let (appended, end) = append(exchange, to: UploadStore.Resource(record: record, received: 0), completes: complete)
        return afterAppend(exchange, upload: appended, end: end, complete: complete, version: version,
                           location: location, status: 201)
    }

    // MARK: The upload resource: HEAD, PATCH, DELETE

    /// HEAD (or GET) `/uploads/<id>`: the offset, completion and length, never cached.
    func offset(_ exchange: Exchange, id: String) -> Exchange.Reply {
        let head = exchange.head
        if head[Header.uploadOffset] != nil || head[Header.uploadComplete] != nil || head[Header.uploadIncomplete] != nil {
            return .response(.text(400, "offset retrieval must not carry Upload-Offset or a completion field"))
        }
        return withSlot(exchange, id: id) { found in
            let upload: UploadStore.Resource
            do throws(ReceiverError) {
                upload = try reportable(found)
            } catch {
                return .failure(error)
            }
            let record = upload.record
            let version = Self.interopVersion(of: head) ?? record.interopVersion
            var response = HTTPResponse(status: 204)
            response.add("Upload-Offset", String(upload.received))
            let completion = ResumableUpload.completionHeader(complete: record.complete, interopVersion: version)
            response.add(completion.name, completion.value)
            if let length = record.length { response.add("Upload-Length", String(length)) }
            if version >= 6 { response.add("Upload-Limit", limits.fieldValue(interopVersion: version)) }
            if let objectID = record.objectID {
                response.add(ResumableUpload.Header.serverResourceID, objectID)
                if let object = store.object(objectID), let digest = Hex.bytes(fromHex: object.sha256) {
                    response.add(ResumableUpload.Header.reprDigest, ResumableUpload.reprDigest(sha256: digest))
                }
            }
            response.add("Cache-Control", "no-store")
            return .response(response)
        }
    }

    /// PATCH `/uploads/<id>`: appends at `Upload-Offset`.
    func patch(_ exchange: Exchange, id: String) -> Exchange.Reply {
        let head = exchange.head
        let known: UploadRecord
        do throws(ReceiverError) {
            guard let upload = try store.upload(id, now: configuration.now()) else {
                return .response(.text(404, "no such upload"))
            }
            known = upload.record
        } catch {
            return .failure(error)
        }
        let version = Self.interopVersion(of: head) ?? known.interopVersion
        if version >= 6 {
            let mediaType = head[Header.contentType]?.split(separator: ";").first?.trimmingSpaces().lowercased()
            guard mediaType == ResumableUpload.partialUploadMediaType else {
                return .response(.text(415, "PATCH needs Content-Type: \(ResumableUpload.partialUploadMediaType)"))
            }
        }
        guard let offsetText = head[Header.uploadOffset], let offset = StructuredField.integer(offsetText), offset >= 0 else {
            return .response(.text(400, "missing or malformed Upload-Offset"))
        }
        var announcedLength: Int64?
        if let text = head[Header.uploadLength] {
            guard let n = StructuredField.integer(text), n >= 0 else {
                return .response(.text(400, "malformed Upload-Length"))
            }
            announcedLength = n
        }
        let explicitCompletion = Self.completionField(head, version: version)
        if case .some(.none) = explicitCompletion {
            return .response(.text(400, "malformed \(Self.completionName(version))"))
        }
        return withSlot(exchange, id: id) { current in
            var record = current.record
            if record.complete {
                return .response(problem(400, type: ResumableUpload.completedUploadProblem, title: "the upload is already complete",
                                                version: version, extra: record.objectID.map { [(ResumableUpload.Header.serverResourceID, $0)] } ?? []))
            }
            if offset != current.received {
                let received: Int64
                do throws(ReceiverError) {
                    received = try reportable(current).received
                } catch {
                    return .failure(error)
                }
                var response = problem(409, type: ResumableUpload.mismatchingOffsetProblem,
                                       title: "offset from request does not match offset of resource", version: version,
                                       members: ["expected-offset": received, "provided-offset": offset])
                response.add("Upload-Offset", String(received))
                let completion = ResumableUpload.completionHeader(complete: false, interopVersion: version)
                response.add(completion.name, completion.value)
                return .response(response)
            }
            let end = offset + exchange.bodyLength
            if end > configuration.maxSize { return .response(.text(413, "larger than max-size")) }
            if let announcedLength {
                if let length = record.length, length != announcedLength {
                    return .response(problem(400, type: ResumableUpload.inconsistentLengthProblem,
                                                    title: "Upload-Length changed", version: version))
                }
                record.length = announcedLength
            }
            let complete = explicitCompletion.flatMap { $0 } ?? record.length.map { end == $0 } ?? true
            if let length = record.length, end > length || (complete && end != length) {
                return .response(problem(400, type: ResumableUpload.inconsistentLengthProblem,
                                                title: "the upload would not end at Upload-Length", version: version))
            }
            if complete && record.length == nil { record.length = end }
            record.metadata.merge(Self.metadata(of: head).successValue ?? ObjectMetadata())
            exchange.continueIfExpected()
            let (appended, bodyEnd) = append(exchange, to: UploadStore.Resource(record: record, received: offset),
                                             completes: complete)
            return afterAppend(exchange, upload: appended, end: bodyEnd, complete: complete, version: version,
                               location: nil, status: 204)
        }
    }

    /// DELETE `/uploads/<id>`: ends any transfer on it and removes it.
    func cancel(_ exchange: Exchange, id: String) -> Exchange.Reply {
        let head = exchange.head
        if head[Header.uploadOffset] != nil || head[Header.uploadComplete] != nil || head[Header.uploadIncomplete] != nil {
            return .response(.text(400, "cancellation must not carry Upload-Offset or a completion field"))
        }
        return withSlot(exchange, id: id) { upload in
            digests.forget(upload.record.id)
            do throws(ReceiverError) {
                try store.removeUpload(upload.record.id)
            } catch {
                return .failure(error)
            }
            return .response(HTTPResponse(status: 204))
        }
    }

    // MARK: Shared steps

    /// Runs `body` holding the upload's slot (ending an older transfer first) with its fresh record
    /// and received length; 404 for an unknown or expired upload.
    private func withSlot(_ exchange: Exchange, id: String,
                          _ body: (UploadStore.Resource) -> Exchange.Reply) -> Exchange.Reply {
        exchange.notes.append("upload=\(id)")
        guard UploadStore.isValidID(id) else { return .response(.text(404, "no such upload")) }
        guard registry.acquire(id, descriptor: exchange.connection.descriptor, timeout: configuration.ioTimeout) else {
            return .response(.text(503, "the upload is busy", headers: [("Retry-After", "1")]))
        }
        defer { registry.release(id) }
        do throws(ReceiverError) {
            guard let upload = try store.upload(id, now: configuration.now()) else {
                return .response(.text(404, "no such upload"))
            }
            return body(upload)
        } catch {
            return .failure(error)
        }
    }

    /// How a body append ended.
    private enum AppendEnd {
        /// Every byte arrived; `sha256` is the digest of the whole upload when this append completed
        /// it and every byte was hashed as it arrived (in this append or earlier ones).
        case complete(sha256: [UInt8]?)
        case interrupted
        case failed(ReceiverError)
    }

    /// An upload whose received length may be reported: with `SyncMode.always` (or an unknown
    /// boot) its bytes are fsync'd first, so the offset survives a machine crash. Otherwise the
    /// bytes are in the file already, which a process kill does not undo.
    private func reportable(_ upload: UploadStore.Resource) throws(ReceiverError) -> UploadStore.Resource {
        guard store.syncsEveryWrite, !upload.record.complete, upload.received > upload.record.durableOffset else { return upload }
        return try store.makeDurable(upload, now: configuration.now())
    }

    /// Streams the exchange's body onto the upload's partial file from its received length.
    ///
    /// Each piece is written to the file before anything else happens, so the file's length is
    /// always an offset the receiver can keep across a kill of its process. fsync happens once
    /// `checkpointInterval` has passed since the upload's last checkpoint (checked as pieces arrive
    /// and when the append ends, so an upload sent in many short appends is covered too), when the
    /// body ends early (the connection ended or a newer request took over), after a body that
    /// `completes` the upload (the object must be durable), and after every append when the store
    /// `syncsEveryWrite`. A failure keeps every byte fully written.
    private func append(_ exchange: Exchange, to start: UploadStore.Resource,
                        completes: Bool) -> (UploadStore.Resource, AppendEnd) {
        var record = start.record
        let path = store.partPath(record.id)
        let fd: Int32
        do throws(ReceiverError) {
            fd = try Syscalls.open(path, O_WRONLY)
        } catch {
            return (start, .failed(error))
        }
        defer { Syscalls.closeDescriptor(fd) }
        var written = start.received
        var hasher = start.received == 0 ? try? SHA256() : digests.take(record.id, continuingAt: start.received)
        let interval = configuration.checkpointInterval
        func checkpointIsDue() -> Bool {
            configuration.now().timeIntervalSince(record.checkpointedAt ?? record.createdAt) >= interval
        }
        do throws(ReceiverError) {
            try Syscalls.truncate(fd, length: start.received, context: path)
            try Syscalls.seek(fd, to: start.received, context: path)
            let result = try exchange.connection.readBody(length: exchange.bodyRemaining) { bytes throws(ReceiverError) in
                let admission = faults?.admit(bytes.count, at: written) ?? .init(allowed: bytes.count)
                let accepted = UnsafeRawBufferPointer(rebasing: bytes[0..<admission.allowed])
                try Syscalls.writeAll(fd, accepted, context: path)
                do { try hasher?.update(accepted) } catch { hasher = nil }
                written += Int64(admission.allowed)
                if let failure = admission.failure { throw failure }
                if checkpointIsDue() {
                    try checkpoint(fd, path: path, record: &record, through: written)
                }
                return !admission.cut
            }
            exchange.bodyRemaining -= result.received
            guard result.complete else {
                try checkpoint(fd, path: path, record: &record, through: written)
                if let hasher { digests.keep(record.id, hasher: hasher, length: written) }
                return (UploadStore.Resource(record: record, received: written), .interrupted)
            }
            if completes {
                // The object is acknowledged once stored, so its bytes must be on disk first;
                // `finish` records the completion.
                try Syscalls.fsync(fd, context: path)
                record.durableOffset = written
            } else if store.syncsEveryWrite || checkpointIsDue() {
                try checkpoint(fd, path: path, record: &record, through: written)
            } else {
                record.updatedAt = configuration.now()
                try store.save(record)
            }
            if !completes {
                if let hasher { digests.keep(record.id, hasher: hasher, length: written) }
                return (UploadStore.Resource(record: record, received: written), .complete(sha256: nil))
            }
            return (UploadStore.Resource(record: record, received: written), .complete(sha256: try? hasher?.finish()))
        } catch {
            // Every byte fully written is a correct prefix: keep it, and make it durable if that
            // still works (on a full disk the record write may fail too).
            try? Syscalls.truncate(fd, length: written, context: path)
            try? checkpoint(fd, path: path, record: &record, through: written)
            return (UploadStore.Resource(record: record, received: written), .failed(error))
        }
    }

    /// fsyncs the partial file and records `offset` as durable (a record write with fsyncs).
    private func checkpoint(_ fd: Int32, path: String, record: inout UploadRecord, through offset: Int64) throws(ReceiverError) {
        try Syscalls.fsync(fd, context: path)
        var next = record
        next.durableOffset = offset
        next.updatedAt = configuration.now()
        next.checkpointedAt = next.updatedAt
        try store.save(next, durable: true)
        record = next
    }

    /// The answer after an append (creation or PATCH): nothing for an interrupted body, the object
    /// for a completing one, the new offset otherwise.
    private func afterAppend(_ exchange: Exchange, upload: UploadStore.Resource, end: AppendEnd, complete: Bool,
                             version: Int, location: String?, status: Int) -> Exchange.Reply {
        let record = upload.record
        let sha256: [UInt8]?
        switch end {
        case .failed(let error):
            return .failure(error)
        case .interrupted:
            exchange.notes.append("interrupted at \(upload.received)")
            return .drop
        case .complete(let digest):
            sha256 = digest
        }
        let completion = ResumableUpload.completionHeader(complete: complete, interopVersion: version)
        guard complete else {
            var response = HTTPResponse(status: status)
            if let location { response.add("Location", location) }
            response.add("Upload-Offset", String(upload.received))
            response.add(completion.name, completion.value)
            if version >= 6 { response.add("Upload-Limit", limits.fieldValue(interopVersion: version)) }
            return .response(response)
        }
        // Without a digest carried over from earlier appends (e.g. after a restart), the
        // stored bytes are read back to compute it.
        if sha256 == nil { exchange.notes.append("digest read back") }
        let staged = store.partPath(record.id)
        return finish(exchange, stagedPath: staged, size: upload.received, metadata: record.metadata, sha256: sha256,
                      location: location, upload: record) { response, _ in
            response.add("Upload-Offset", String(upload.received))
            response.add(completion.name, completion.value)
        }
    }

    /// Turns staged bytes into an object and answers: 201 for a new object, 200 for a duplicate
    /// (same idempotency key and content; nothing new stored), 400 for a digest mismatch (nothing stored).
    /// A creation answers 201 either way. The upload record, if any, is marked complete.
    private func finish(_ exchange: Exchange, stagedPath: String, size: Int64, metadata: ObjectMetadata, sha256: [UInt8]?,
                        location: String?, upload: UploadRecord? = nil,
                        decorate: (inout HTTPResponse, StoredObject) -> Void) -> Exchange.Reply {
        let completion: UploadStore.Completion
        do throws(ReceiverError) {
            completion = try store.complete(stagedPath: stagedPath, size: size, metadata: metadata, sha256: sha256,
                                            reservedID: upload?.reservedObjectID, now: configuration.now())
        } catch {
            return .failure(error)
        }
        let object: StoredObject
        var status: Int
        switch completion {
        case .digestMismatch:
            exchange.notes.append("digest mismatch")
            if let upload { try? store.removeUpload(upload.id) }
            return .response(.text(400, "the content does not match Repr-Digest; nothing was stored"))
        case .stored(let stored):
            object = stored
            status = 201
            if stored.layoutNote != nil { exchange.notes.append("layout-fallback") }
        case .deduplicated(let existing):
            object = existing
            status = 200
            exchange.notes.append("duplicate")
        }
        if location != nil { status = 201 }
        // A new object stored under the upload's reserved id makes the record read as complete
        // as it is; a duplicate leaves the reservation unused, so the record names the object.
        var storedUnderReservation = false
        if case .stored(let stored) = completion, stored.id == upload?.reservedObjectID { storedUnderReservation = true }
        if var upload, !storedUnderReservation {
            upload.complete = true
            upload.objectID = object.id
            upload.durableOffset = size
            upload.length = size
            upload.updatedAt = configuration.now()
            do throws(ReceiverError) {
                try store.save(upload)
            } catch {
                return .failure(error)
            }
        }
        exchange.notes.append("object=\(object.id)")
        var response = HTTPResponse(status: status)
        if let location { response.add("Location", location) }
        decorate(&response, object)
        response.add(ResumableUpload.Header.serverResourceID, object.id)
        if let digest = Hex.bytes(fromHex: object.sha256) {
            // The stored object's digest, so a client can tell its own photo from other bytes
            // stored under the same key.
            response.add(ResumableUpload.Header.reprDigest, ResumableUpload.reprDigest(sha256: digest))
        }
        response.add("Content-Type", "application/json")
        response.body = UploadStore.json(object)
        return .response(response)
    }

    /// An RFC 9457 problem (JSON body from interop 6, plain text before).
    private func problem(_ status: Int, type: String, title: String, version: Int,
                         members: [String: Int64] = [:], extra: [(name: String, value: String)] = []) -> HTTPResponse {
        guard version >= 6 else { return .text(status, title, headers: extra) }
        var body = "{\"type\":\"\(type)\",\"title\":\"\(title)\""
        for (key, value) in members.sorted(by: { $0.key < $1.key }) { body += ",\"\(key)\":\(value)" }
        body += "}"
        return HTTPResponse(status: status, headers: extra + [("Content-Type", "application/problem+json")],
                            body: Array(body.utf8))
    }

    /// The upload URL, as a path: the client resolves it against the URL it sent the creation to
    /// (RFC 9110 10.2.2). An absolute URL built from the Host header named the wrong scheme, and
    /// often the wrong port, behind a TLS-terminating proxy (`proxy_set_header Host $host`), so
    /// every append after the creation went to a port nobody listens on.
    static func location(of id: String) -> String {
        "/uploads/\(id)"
    }

    /// The completion field for the version: `.some(flag)` when present (`.some(nil)` when
    /// malformed), nil when absent.
    private static func completionField(_ head: HTTPRequestHead, version: Int) -> Bool?? {
        if version <= 3 {
            guard let text = head[Header.uploadIncomplete] else { return nil }
            return .some(StructuredField.boolean(text).map { !$0 })
        }
        guard let text = head[Header.uploadComplete] else { return nil }
        return .some(StructuredField.boolean(text))
    }

    private static func completionName(_ version: Int) -> String {
        version <= 3 ? "Upload-Incomplete" : "Upload-Complete"
    }

    /// Why request metadata was refused.
    struct MetadataProblem: Error {
        let reason: String
    }

    /// The idempotency key, expected digest, file name and verdict a request carries.
    static func metadata(of head: HTTPRequestHead) -> Result<ObjectMetadata, MetadataProblem> {
        var metadata = ObjectMetadata()
        if let key = head[Header.idempotencyKey] {
            guard !key.isEmpty, key.utf8.count <= 256 else { return .failure(.init(reason: "Idempotency-Key too long")) }
            metadata.idempotencyKey = key
        }
        if let digest = head[Header.reprDigest] {
            guard let members = StructuredField.dictionary(digest) else {
                return .failure(.init(reason: "malformed Repr-Digest"))
            }
            if members.contains(where: { $0.key == "sha-256" }) {
                guard let sha = ResumableUpload.sha256(fromReprDigest: digest) else {
                    return .failure(.init(reason: "malformed sha-256 in Repr-Digest"))
                }
                metadata.expectedSHA256 = sha
            }
        }
        if let disposition = head[Header.contentDisposition],
           let name = ResumableUpload.filenameBytes(fromContentDisposition: disposition) {
            metadata.filename = String(decoding: name, as: UTF8.self)
            if String(validating: name, as: UTF8.self) == nil { metadata.filenameEncoded = Provenance.percentEncode(name) }
        }
        metadata.verdict = head[Header.verdict]
        do throws(Provenance.Malformed) {
            metadata.provenance = try Provenance.parse { head[$0] }.map(ObjectProvenance.init)
        } catch {
            return .failure(.init(reason: error.reason))
        }
        return .success(metadata)
    }
}

extension Result {
    /// The success value, or nil.
    var successValue: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
