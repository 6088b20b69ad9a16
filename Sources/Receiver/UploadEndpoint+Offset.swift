import UploadProtocol

/// Offset retrieval: HEAD on the upload resource answers how much of the upload the receiver
/// holds, reported only once it is as durable as the sync mode promises.
extension UploadEndpoint {
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
                if let object = store.verifiedObject(objectID), let digest = Hex.bytes(fromHex: object.sha256) {
                    response.add(ResumableUpload.Header.reprDigest, ResumableUpload.reprDigest(sha256: digest))
                }
            }
            response.add("Cache-Control", "no-store")
            return .response(response)
        }
    }

    /// An upload whose received length may be reported: with `SyncMode.always` (or an unknown
    /// boot) its bytes are fsync'd first, so the offset survives a machine crash. Otherwise the
    /// bytes are in the file already, which a process kill does not undo.
    func reportable(_ upload: UploadStore.Resource) throws(ReceiverError) -> UploadStore.Resource {
        guard store.syncsEveryWrite, !upload.record.complete, upload.received > upload.record.durableOffset else { return upload }
        return try store.makeDurable(upload, now: configuration.now())
    }
}
