#if canImport(Glibc)
import Glibc
#endif
import SystemSupport
import UploadProtocol

/// Creation: POST (or PUT) on the upload target, either a plain upload without the protocol's
/// headers or a creation that names the upload resource (in a 104 when the client takes interim
/// responses) and appends the body it carries.
extension UploadEndpoint {
    /// A creation request (completion header present, known version) or a plain upload.
    func upload(_ exchange: Exchange) -> Exchange.Reply {
        let head = exchange.head
        var metadata: ObjectMetadata
        switch Self.metadata(of: head) {
        case .success(let parsed): metadata = parsed
        case .failure(let problem): return .response(.text(400, problem.reason))
        }
        metadata.device = exchange.principal.device
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
        if let refusal = quotaRefusal(exchange, length: exchange.bodyLength) { return refusal }
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
                try write(bytes, to: fd, context: staging, written: &written, hasher: &hasher)
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
        if let refusal = quotaRefusal(exchange, length: max(uploadLength ?? 0, contentLength)) { return refusal }
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
}
