import Foundation
import SystemSupport
import Transfer
import UploadProtocol

/// The resumable-upload protocol (interop versions 3 to 8) and plain uploads on a bucket
/// (`serve --store s3://…`), with the same answers as `UploadEndpoint` on a directory. Nothing
/// lives in the instance between requests: an upload created on one instance is appended to,
/// asked about and completed on any other. Two requests on one upload are kept apart by the
/// record's conditional writes (`S3UploadWriter`), not by a slot in one process: the one whose
/// write loses answers 409 with the offset the bucket holds.
struct S3UploadEndpoint: Sendable {
    let configuration: ReceiverConfiguration
    /// Bytes per part (S3's 5 MiB minimum by default).
    let partSize: Int

    typealias Header = ResumableUpload.Header

    var limits: UploadLimits {
        UploadLimits(maxSize: configuration.maxSize, maxAge: Int64(configuration.partialTTL))
    }

    // MARK: Creation and plain uploads

    /// POST or PUT on the upload target: a creation (completion header, known version) or a plain upload.
    func upload(_ exchange: Exchange, space: S3Space) -> Exchange.Reply {
        let head = exchange.head
        var metadata: ObjectMetadata
        switch UploadEndpoint.metadata(of: head) {
        case .success(let parsed): metadata = parsed
        case .failure(let problem): return .response(.text(400, problem.reason))
        }
        metadata.device = exchange.principal.device
        let version = UploadEndpoint.interopVersion(of: head)
        var complete = true
        var uploadLength: Int64?
        if let version, let field = UploadEndpoint.completionField(head, version: version) {
            guard let flag = field else { return .response(.text(400, "malformed \(UploadEndpoint.completionName(version))")) }
            complete = flag
            if let text = head[Header.uploadLength] {
                guard let n = StructuredField.integer(text), n >= 0 else { return .response(.text(400, "malformed Upload-Length")) }
                uploadLength = n
            }
        } else if head["content-length"] == nil {
            return .response(.text(411, "a plain upload needs Content-Length"))
        }
        let resumable = version != nil && UploadEndpoint.completionField(head, version: version!) != nil
        let contentLength = exchange.bodyLength
        if contentLength > configuration.maxSize || (uploadLength ?? 0) > configuration.maxSize {
            return .response(.text(413, "larger than max-size"))
        }
        if let uploadLength, complete ? uploadLength != contentLength : contentLength > uploadLength {
            return .response(problem(400, type: ResumableUpload.inconsistentLengthProblem,
                                     title: "Upload-Length does not match the content", version: version ?? 3))
        }
        if let refusal = quotaRefusal(exchange, space: space, length: max(uploadLength ?? 0, contentLength)) { return refusal }
        let now = configuration.now()
        let record = S3UploadRecord(id: UploadStore.newID(), interopVersion: version ?? 0,
                                    length: complete ? contentLength : uploadLength, metadata: metadata, createdAt: now,
                                    updatedAt: now, reservedObjectID: UploadStore.newID())
        let writer: S3UploadWriter
        do throws(ReceiverError) {
            guard case .claimed(let claimed) = try S3UploadWriter.claim(record, etag: nil, space: space, partSize: partSize, now: now) else {
                return .failure(ReceiverError(code: .io, message: "a new upload id was taken"))
            }
            writer = claimed
        } catch {
            return .failure(error)
        }
        exchange.notes.append("upload=\(record.id)")
        let location = resumable ? UploadEndpoint.location(of: record.id) : nil
        if let location, let version, exchange.takesInterimResponses {
            var interim = HTTPResponse(status: ResumableUpload.uploadResumptionSupported)
            interim.add("Location", location)
            interim.add("Upload-Draft-Interop-Version", String(version))
            if version >= 6 { interim.add("Upload-Limit", limits.fieldValue(interopVersion: version)) }
            exchange.sendInterim(interim)
            exchange.sentInterim = true
        }
        exchange.continueIfExpected()
        return append(exchange, writer: writer, completes: complete, version: version ?? 3, location: location,
                      plain: !resumable, status: 201)
    }

    // MARK: Append

    /// PATCH `/uploads/<id>`: appends at `Upload-Offset`.
    func patch(_ exchange: Exchange, id: String, space: S3Space) -> Exchange.Reply {
        let head = exchange.head
        exchange.notes.append("upload=\(id)")
        let found: (record: S3UploadRecord, etag: String)
        do throws(ReceiverError) {
            guard let loaded = try live(id, space: space), exchange.owns(device: loaded.record.metadata.device) else {
                return .response(.text(404, "no such upload"))
            }
            found = loaded
        } catch {
            return .failure(error)
        }
        var record = found.record
        let patch: UploadEndpoint.PatchHead
        switch UploadEndpoint.patchHead(head, recordVersion: record.interopVersion) {
        case .success(let read): patch = read
        case .failure(let refusal): return .response(refusal.response)
        }
        let (version, offset) = (patch.version, patch.offset)
        if record.complete {
            return .response(problem(400, type: ResumableUpload.completedUploadProblem, title: "the upload is already complete",
                                     version: version, extra: record.objectID.map { [(Header.serverResourceID, $0)] } ?? []))
        }
        if offset != record.offset { return .response(conflict(offset: offset, held: record.offset, version: version)) }
        let end = offset + exchange.bodyLength
        if end > configuration.maxSize { return .response(.text(413, "larger than max-size")) }
        let knownLength = record.length
        let complete: Bool
        switch UploadEndpoint.settleLength(known: record.length, patch: patch, end: end, problem: {
            problem(400, type: ResumableUpload.inconsistentLengthProblem, title: $0, version: version)
        }) {
        case .success(let settled): (record.length, complete) = settled
        case .failure(let refusal): return .response(refusal.response)
        }
        if let refusal = quotaRefusal(exchange, space: space, length: max(patch.announcedLength ?? knownLength ?? 0, end)) { return refusal }
        record.metadata.merge(UploadEndpoint.metadata(of: head).successValue ?? ObjectMetadata())
        let writer: S3UploadWriter
        do throws(ReceiverError) {
            let claim = try S3UploadWriter.claim(record, etag: found.etag, space: space, partSize: partSize, now: configuration.now())
            guard case .claimed(let claimed) = claim else {
                exchange.notes.append("lost-claim")
                let held = (try? live(id, space: space))??.record.offset ?? record.offset
                return .response(conflict(offset: offset, held: held, version: version))
            }
            writer = claimed
        } catch {
            return .failure(error)
        }
        exchange.continueIfExpected()
        return append(exchange, writer: writer, completes: complete, version: version, location: nil, plain: false, status: 204)
    }

    /// Streams the body into the writer, then answers: the new offset, the object for a completing
    /// body, nothing for a cut one, 409 for a writer another request superseded.
    private func append(_ exchange: Exchange, writer: S3UploadWriter, completes: Bool, version: Int, location: String?,
                        plain: Bool, status: Int) -> Exchange.Reply {
        let now = configuration.now
        let bodyComplete: Bool
        do throws(ReceiverError) {
            let result = try exchange.connection.readBody(length: exchange.bodyRemaining) { bytes throws(ReceiverError) in
                try writer.take(bytes, now: now())
            }
            exchange.bodyRemaining -= result.received
            bodyComplete = result.complete
            if writer.superseded { return superseded(exchange, writer: writer, version: version) }
            guard bodyComplete && completes else {
                // Whatever arrived is kept (a cut body too): the next request resumes after it.
                guard try writer.saveTail(now: now()) else { return superseded(exchange, writer: writer, version: version) }
                if !bodyComplete {
                    exchange.notes.append("interrupted at \(writer.received)")
                    return .drop
                }
                let completion = ResumableUpload.completionHeader(complete: false, interopVersion: version)
                var response = HTTPResponse(status: status)
                if let location { response.add("Location", location) }
                response.add("Upload-Offset", String(writer.received))
                response.add(completion.name, completion.value)
                if version >= 6 { response.add("Upload-Limit", limits.fieldValue(interopVersion: version)) }
                return .response(response)
            }
            let bytes = try writer.commitForCompletion(now: now())
            if writer.superseded { return superseded(exchange, writer: writer, version: version) }
            return try finish(exchange, writer: writer, bytes: bytes, version: version, location: location, plain: plain)
        } catch {
            return .failure(error)
        }
    }

    /// Stores the object of a fully committed upload and answers as `UploadEndpoint.finish` does.
    private func finish(_ exchange: Exchange, writer: S3UploadWriter, bytes: [UInt8]?, version: Int, location: String?,
                        plain: Bool) throws(ReceiverError) -> Exchange.Reply {
        let record = writer.record
        let completion = try writer.space.complete(record, bytes: bytes, length: writer.received, sha256: writer.finishDigest(),
                                                   now: configuration.now(),
                                                   pause: configuration.s3IndexPause)
        let object: StoredObject
        var status: Int
        switch completion {
        case .digestMismatch:
            exchange.notes.append("digest mismatch")
            try? writer.space.removeUpload(writer.record)
            return .response(.text(400, "the content does not match Repr-Digest; nothing was stored"))
        case .stored(let stored):
            object = stored
            status = 201
        case .deduplicated(let existing):
            object = existing
            status = 200
            exchange.notes.append("duplicate")
        }
        if location != nil { status = 201 }
        // Lost only to a request that took the upload over after every byte was committed; it
        // completes to this same object (the reserved id's sidecar stands, or the first copy's).
        _ = try writer.commitCompletion(objectID: object.id, length: object.size, now: configuration.now())
        exchange.notes.append("object=\(object.id)")
        var response = HTTPResponse(status: status)
        if let location { response.add("Location", location) }
        if plain {
            response.add("Location", "/objects/\(object.id)")
        } else {
            let field = ResumableUpload.completionHeader(complete: true, interopVersion: version)
            response.add("Upload-Offset", String(object.size))
            response.add(field.name, field.value)
        }
        response.add(Header.serverResourceID, object.id)
        if let digest = Hex.bytes(fromHex: object.sha256) {
            response.add(Header.reprDigest, ResumableUpload.reprDigest(sha256: digest))
        }
        response.add("Content-Type", "application/json")
        response.body = UploadStore.json(object)
        return .response(response)
    }

    // MARK: Offset, cancellation

    /// HEAD (or GET) `/uploads/<id>`: the offset the bucket holds, from any instance.
    func offset(_ exchange: Exchange, id: String, space: S3Space) -> Exchange.Reply {
        let head = exchange.head
        exchange.notes.append("upload=\(id)")
        if head[Header.uploadOffset] != nil || head[Header.uploadComplete] != nil || head[Header.uploadIncomplete] != nil {
            return .response(.text(400, "offset retrieval must not carry Upload-Offset or a completion field"))
        }
        do throws(ReceiverError) {
            guard let (record, _) = try live(id, space: space), exchange.owns(device: record.metadata.device) else {
                return .response(.text(404, "no such upload"))
            }
            let version = UploadEndpoint.interopVersion(of: head) ?? record.interopVersion
            var response = HTTPResponse(status: 204)
            // A finished upload's bytes are its object's (a small one never had parts).
            response.add("Upload-Offset", String(record.complete ? record.length ?? record.offset : record.offset))
            let completion = ResumableUpload.completionHeader(complete: record.complete, interopVersion: version)
            response.add(completion.name, completion.value)
            if let length = record.length { response.add("Upload-Length", String(length)) }
            if version >= 6 { response.add("Upload-Limit", limits.fieldValue(interopVersion: version)) }
            if let objectID = record.objectID {
                response.add(Header.serverResourceID, objectID)
                if let object = try space.object(objectID), let digest = Hex.bytes(fromHex: object.sha256) {
                    response.add(Header.reprDigest, ResumableUpload.reprDigest(sha256: digest))
                }
            }
            response.add("Cache-Control", "no-store")
            return .response(response)
        } catch {
            return .failure(error)
        }
    }

    /// DELETE `/uploads/<id>`: removes the upload (a request still streaming into it loses its next commit).
    func cancel(_ exchange: Exchange, id: String, space: S3Space) -> Exchange.Reply {
        exchange.notes.append("upload=\(id)")
        do throws(ReceiverError) {
            guard let (record, _) = try live(id, space: space), exchange.owns(device: record.metadata.device) else {
                return .response(.text(404, "no such upload"))
            }
            try space.removeUpload(record)
            return .response(HTTPResponse(status: 204))
        } catch {
            return .failure(error)
        }
    }

    // MARK: Shared

    /// The `507` of `UploadEndpoint.quotaRefusal` for an account with a quota, weighed against the
    /// bytes its objects hold in the bucket now (a listing, made only for accounts with a quota).
    private func quotaRefusal(_ exchange: Exchange, space: S3Space, length: Int64) -> Exchange.Reply? {
        guard let quota = exchange.quota else { return nil }
        let used: Int64
        do throws(ReceiverError) {
            used = try space.storedBytes()
        } catch {
            return .failure(error)
        }
        guard used > quota - length || length > quota else { return nil }
        exchange.notes.append("over-quota")
        return .response(.problem(507, type: ResumableUpload.quotaExceededProblem, title: "the account's quota would be exceeded",
                                  detail: "account \(exchange.principal.account) holds \(used) bytes of its \(quota)-byte quota; "
                                      + "an upload of \(length) bytes does not fit",
                                  numbers: ["quota": quota, "used": used, "upload-length": length]))
    }

    /// An upload's record unless unknown or expired (an expired one is removed).
    private func live(_ id: String, space: S3Space) throws(ReceiverError) -> (record: S3UploadRecord, etag: String)? {
        guard let found = try space.record(id) else { return nil }
        if configuration.now().timeIntervalSince(found.record.updatedAt) > configuration.partialTTL {
            try space.removeUpload(found.record)
            return nil
        }
        return found
    }

    private func superseded(_ exchange: Exchange, writer: S3UploadWriter, version: Int) -> Exchange.Reply {
        exchange.notes.append("superseded")
        let held = (try? writer.space.record(writer.record.id))??.record.offset ?? writer.record.offset
        return .response(conflict(offset: held, held: held, version: version))
    }

    /// The 409 for an offset that is not the one the bucket holds (or a request that lost the upload).
    private func conflict(offset: Int64, held: Int64, version: Int) -> HTTPResponse {
        var response = problem(409, type: ResumableUpload.mismatchingOffsetProblem,
                               title: "offset from request does not match offset of resource", version: version,
                               members: ["expected-offset": held, "provided-offset": offset])
        response.add("Upload-Offset", String(held))
        let completion = ResumableUpload.completionHeader(complete: false, interopVersion: version)
        response.add(completion.name, completion.value)
        return response
    }

    private func problem(_ status: Int, type: String, title: String, version: Int, members: [String: Int64] = [:],
                         extra: [(name: String, value: String)] = []) -> HTTPResponse {
        guard version >= 6 else { return .text(status, title, headers: extra) }
        return .problem(status, type: type, title: title, numbers: members, headers: extra)
    }
}

extension Exchange {
    /// Whether the request's token may use an upload created by `device` (as `owns(_:)`).
    func owns(device: String?) -> Bool {
        principal.scope == .admin || device == principal.device
    }
}
