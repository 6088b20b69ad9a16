#if canImport(Glibc)
import Glibc
#endif
import SystemSupport
import UploadProtocol

/// Appending: PATCH on the upload resource at the offset the receiver holds, and the body of an
/// append or a creation streamed onto the partial file with the checkpoints that let its offset
/// survive a kill.
extension UploadEndpoint {
    /// PATCH `/uploads/<id>`: appends at `Upload-Offset`.
    func patch(_ exchange: Exchange, id: String) -> Exchange.Reply {
        let head = exchange.head
        let known: UploadRecord
        do throws(ReceiverError) {
            guard let upload = try store.upload(id, now: configuration.now()), exchange.owns(upload.record) else {
                return .response(.text(404, "no such upload"))
            }
            known = upload.record
        } catch {
            return .failure(error)
        }
        let patch: PatchHead
        switch Self.patchHead(head, recordVersion: known.interopVersion) {
        case .success(let read): patch = read
        case .failure(let refusal): return .response(refusal.response)
        }
        let (version, offset) = (patch.version, patch.offset)
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
            if let refusal = quotaRefusal(exchange, length: max(patch.announcedLength ?? record.length ?? 0, end)) { return refusal }
            let complete: Bool
            switch Self.settleLength(known: record.length, patch: patch, end: end, problem: {
                problem(400, type: ResumableUpload.inconsistentLengthProblem, title: $0, version: version)
            }) {
            case .success(let settled): (record.length, complete) = settled
            case .failure(let refusal): return .response(refusal.response)
            }
            record.metadata.merge(Self.metadata(of: head).successValue ?? ObjectMetadata())
            exchange.continueIfExpected()
            let (appended, bodyEnd) = append(exchange, to: UploadStore.Resource(record: record, received: offset),
                                             completes: complete)
            return afterAppend(exchange, upload: appended, end: bodyEnd, complete: complete, version: version,
                               location: nil, status: 204)
        }
    }

    /// How a body append ended.
    enum AppendEnd {
        /// Every byte arrived; `sha256` is the digest of the whole upload when this append completed
        /// it and every byte was hashed as it arrived (in this append or earlier ones).
        case complete(sha256: [UInt8]?)
        case interrupted
        case failed(ReceiverError)
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
    func append(_ exchange: Exchange, to start: UploadStore.Resource,
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
                let goesOn = try write(bytes, to: fd, context: path, written: &written, hasher: &hasher)
                if checkpointIsDue() {
                    try checkpoint(fd, path: path, record: &record, through: written)
                }
                return goesOn
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
    func afterAppend(_ exchange: Exchange, upload: UploadStore.Resource, end: AppendEnd, complete: Bool,
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
}
