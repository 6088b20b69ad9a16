import Foundation
import SystemSupport
import UploadProtocol

/// The routes of a receiver on a bucket (`serve --store s3://…`): the same paths, scopes and
/// answers as on a directory, each request read from and written to the account's `S3Space`.
extension RequestHandler {
    func routeS3(_ exchange: Exchange, parts: [String], space: S3Space) -> Exchange.Outcome {
        let head = exchange.head
        let principal = exchange.principal
        let uploads = s3Uploads
        switch (head.method, parts.first, parts.count) {
        case ("OPTIONS", _, _) where head.path == "*" || parts.isEmpty || parts == ["uploads"]:
            let version = UploadEndpoint.interopVersion(of: head) ?? ResumableUpload.supportedInteropVersions.upperBound
            var response = HTTPResponse(status: 200)
            response.add("Upload-Limit", uploads.limits.fieldValue(interopVersion: version))
            response.add("Allow", "OPTIONS, POST, PUT")
            if version >= 8 { response.add("Accept-Patch", ResumableUpload.partialUploadMediaType) }
            return exchange.respond(response)
        case ("POST", _, _) where parts.isEmpty || parts == ["uploads"],
             ("PUT", _, _) where parts.isEmpty || parts == ["uploads"]:
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            guard beginUpload(principal) else { return tooManyUploads(exchange) }
            defer { endUpload(principal) }
            return exchange.reply(uploads.upload(exchange, space: space))
        case (_, _, 0), (_, "uploads", 1):
            return exchange.respond(.text(405, "method not allowed", headers: [("Allow", "OPTIONS, POST, PUT")]))
        case ("HEAD", "uploads", 2), ("GET", "uploads", 2):
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            return exchange.reply(uploads.offset(exchange, id: parts[1], space: space))
        case ("PATCH", "uploads", 2):
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            guard beginUpload(principal) else { return tooManyUploads(exchange) }
            defer { endUpload(principal) }
            return exchange.reply(uploads.patch(exchange, id: parts[1], space: space))
        case ("DELETE", "uploads", 2):
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            return exchange.reply(uploads.cancel(exchange, id: parts[1], space: space))
        case (_, "uploads", 2):
            return exchange.respond(.text(405, "method not allowed", headers: [("Allow", "HEAD, GET, PATCH, DELETE")]))
        case ("GET", "objects", 1), ("HEAD", "objects", 1):
            guard principal.scope.allows(.read) else { return forbidden(exchange, principal, needs: .read) }
            do throws(ReceiverError) {
                return exchange.respond(json(try space.objects().map { shownS3($0, in: space, to: principal) }))
            } catch {
                return exchange.fail(error)
            }
        case ("GET", "objects", 3) where parts[1] == "by-digest", ("HEAD", "objects", 3) where parts[1] == "by-digest":
            guard principal.scope.allows(.upload) else { return forbidden(exchange, principal, needs: .upload) }
            let lowered = parts[2].lowercased()
            guard lowered.utf8.count == 64, let digest = Hex.bytes(fromHex: lowered) else {
                return exchange.respond(.text(400, "the digest is not 64 hex digits"))
            }
            do throws(ReceiverError) {
                guard let object = try space.object(sha256Hex: lowered) else {
                    exchange.notes.append("digest-miss")
                    return exchange.respond(.text(404, "no object with that digest"))
                }
                exchange.notes.append("digest-hit")
                var response = json(shownS3(object, in: space, to: principal))
                response.add(ResumableUpload.Header.serverResourceID, object.id)
                response.add(ResumableUpload.Header.reprDigest, ResumableUpload.reprDigest(sha256: digest))
                return exchange.respond(response)
            } catch {
                return exchange.fail(error)
            }
        case ("GET", "objects", 2), ("HEAD", "objects", 2):
            guard principal.scope.allows(.read) else { return forbidden(exchange, principal, needs: .read) }
            do throws(ReceiverError) {
                guard let object = try space.object(parts[1]) else { return exchange.respond(.text(404, "no such object")) }
                return exchange.respond(json(shownS3(object, in: space, to: principal)))
            } catch {
                return exchange.fail(error)
            }
        case ("GET", "objects", 3) where parts[2] == "content":
            guard principal.scope.allows(.read) else { return forbidden(exchange, principal, needs: .read) }
            return content(exchange, id: parts[1], space: space)
        default:
            return exchange.respond(.text(404, "not found"))
        }
    }

    /// `GET /objects/<id>/content`: the object's bytes, streamed from the bucket as they arrive.
    /// The head is sent first; a bucket that fails midway leaves the body short and the
    /// connection closed, which a client takes as a failed download.
    private func content(_ exchange: Exchange, id: String, space: S3Space) -> Exchange.Outcome {
        let object: StoredObject
        do throws(ReceiverError) {
            guard let found = try space.object(id) else { return exchange.respond(.text(404, "no such object")) }
            object = found
        } catch {
            return exchange.fail(error)
        }
        if exchange.bodyRemaining > 0 { return exchange.respond(.text(400, "GET carries no body")) }
        let keepAlive = exchange.head.keepAlive
        let response = HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")])
        guard exchange.connection.sendStreamedHead(response, length: object.size, close: !keepAlive) else {
            return Exchange.Outcome(status: 200, keepAlive: false)
        }
        let socket = SocketSink(descriptor: exchange.connection.descriptor)
        let sent = try? space.bucket.stream(space.key(S3Space.bytesKey(of: object))) { bytes in socket.send(bytes) }
        let whole = sent == object.size && !socket.failed
        if !whole { exchange.notes.append("content cut short") }
        return Exchange.Outcome(status: 200, keepAlive: whole && keepAlive)
    }

    /// An object as answered to a device token: with its account named (as on a directory).
    private func shownS3(_ object: StoredObject, in space: S3Space, to principal: Principal) -> StoredObject {
        guard principal.tokenID != nil else { return object }
        var shown = object
        shown.account = space.account
        return shown
    }
}

/// A client's socket written from libcurl's thread while an object streams from the bucket;
/// after one failed send it takes nothing more.
private final class SocketSink: @unchecked Sendable {
    let descriptor: Int32
    private let lock = NSLock()
    private var broken = false

    init(descriptor: Int32) { self.descriptor = descriptor }

    var failed: Bool { lock.lock(); defer { lock.unlock() }; return broken }

    func send(_ bytes: UnsafeRawBufferPointer) {
        lock.lock()
        defer { lock.unlock() }
        guard !broken else { return }
        do throws(ReceiverError) {
            try Syscalls.sendAll(descriptor, bytes)
        } catch {
            broken = true
        }
    }
}
