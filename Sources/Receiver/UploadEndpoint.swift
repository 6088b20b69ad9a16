import Foundation
import SystemSupport
import UploadProtocol

/// The upload side of the receiver: plain uploads, and the server side of "Resumable Uploads for
/// HTTP" for interop versions 3 to 8 (creation with 104, offset retrieval, append, cancellation).
///
/// Each part of the protocol has a file of its own (`+Creation`, `+Append`, `+Offset`), named as
/// the client's `UploadSession` names the other side.
struct UploadEndpoint: Sendable {
    let configuration: ReceiverConfiguration
    let store: UploadStore
    let registry: TransferRegistry
    /// Running digests handed from one append of an upload to the next.
    let digests = PartialDigests()

    typealias Header = ResumableUpload.Header

    var faults: FaultInjection? { configuration.faultInjection }

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

    // MARK: DELETE on the upload resource

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
    /// and received length; 404 for an unknown or expired upload, and for another device's
    /// (`Exchange.owns`), with the same body.
    func withSlot(_ exchange: Exchange, id: String,
                  _ body: (UploadStore.Resource) -> Exchange.Reply) -> Exchange.Reply {
        exchange.notes.append("upload=\(id)")
        guard UploadStore.isValidID(id) else { return .response(.text(404, "no such upload")) }
        // Another account's or device's upload is not touched at all: taking its slot would end
        // the transfer in flight on it, and a wait for the slot would tell that it exists.
        // (A record that cannot be read is left to the lookup below, which answers 500.)
        guard Syscalls.exists(store.recordPath(id)) else { return .response(.text(404, "no such upload")) }
        if let seen = store.storedRecord(id), !exchange.owns(seen.current) { return .response(.text(404, "no such upload")) }
        guard registry.acquire(id, descriptor: exchange.connection.descriptor, timeout: configuration.ioTimeout) else {
            return .response(.text(503, "the upload is busy", headers: [("Retry-After", "1")]))
        }
        defer { registry.release(id) }
        do throws(ReceiverError) {
            guard let upload = try store.upload(id, now: configuration.now()), exchange.owns(upload.record) else {
                return .response(.text(404, "no such upload"))
            }
            return body(upload)
        } catch {
            return .failure(error)
        }
    }

    /// Turns staged bytes into an object and answers: 201 for a new object, 200 for a duplicate
    /// (same idempotency key and content; nothing new stored), 400 for a digest mismatch (nothing stored).
    /// A creation answers 201 either way. The upload record, if any, is marked complete.
    func finish(_ exchange: Exchange, stagedPath: String, size: Int64, metadata: ObjectMetadata, sha256: [UInt8]?,
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

    /// The `507` for an upload of `length` bytes that would take the account past its quota
    /// (what its objects hold now, `UploadStore.storedBytes`, plus this upload), as a problem
    /// body saying how much is used of how much; nil when it fits or there is no quota. Uploads
    /// in progress reserve nothing: each is weighed when it is created and at each append.
    func quotaRefusal(_ exchange: Exchange, length: Int64) -> Exchange.Reply? {
        guard let quota = exchange.quota else { return nil }
        let used = store.storedBytes.withLock { $0 }
        guard used > quota - length || length > quota else { return nil }
        exchange.notes.append("over-quota")
        return .response(.problem(507, type: ResumableUpload.quotaExceededProblem, title: "the account's quota would be exceeded",
                                  detail: "account \(exchange.principal.account) holds \(used) bytes of its \(quota)-byte quota; "
                                      + "an upload of \(length) bytes does not fit",
                                  numbers: ["quota": quota, "used": used, "upload-length": length]))
    }

    /// An RFC 9457 problem (JSON body from interop 6, plain text before).
    func problem(_ status: Int, type: String, title: String, version: Int,
                 members: [String: Int64] = [:], extra: [(name: String, value: String)] = []) -> HTTPResponse {
        guard version >= 6 else { return .text(status, title, headers: extra) }
        return .problem(status, type: type, title: title, numbers: members, headers: extra)
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
    static func completionField(_ head: HTTPRequestHead, version: Int) -> Bool?? {
        if version <= 3 {
            guard let text = head[Header.uploadIncomplete] else { return nil }
            return .some(StructuredField.boolean(text).map { !$0 })
        }
        guard let text = head[Header.uploadComplete] else { return nil }
        return .some(StructuredField.boolean(text))
    }

    static func completionName(_ version: Int) -> String {
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


extension UploadEndpoint {
    /// Writes a piece of body that arrived at offset `written` to `fd` (what fault injection
    /// admits of it: all of it unless a test injects a cut or a full disk), and into `hasher`
    /// (dropped if hashing fails: the digest is then read back from the file), moving `written`
    /// on. Throws an injected failure once the admitted bytes are written; false when an injected
    /// cut ends the body here.
    func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32, context: String, written: inout Int64,
               hasher: inout SHA256?) throws(ReceiverError) -> Bool {
        let admission = faults?.admit(bytes.count, at: written) ?? .init(allowed: bytes.count)
        let accepted = UnsafeRawBufferPointer(rebasing: bytes[0..<admission.allowed])
        try Syscalls.writeAll(fd, accepted, context: context)
        do { try hasher?.update(accepted) } catch { hasher = nil }
        written += Int64(admission.allowed)
        if let failure = admission.failure { throw failure }
        return !admission.cut
    }
}

extension Result {
    /// The success value, or nil.
    var successValue: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
