#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// `uploads/`: resumable uploads' partial bytes and records, each upload looked up settled (complete
/// once its reserved object exists) and removed once expired, and what the expiry sweep reads.
extension UploadStore {
    /// Creates an upload resource: an empty partial file and its record. Both survive a process
    /// kill; they are fsync'd only when `syncsEveryWrite` (after a machine crash an unsynced
    /// resource may be gone, and its client starts over: a 404 is an answer it handles).
    func createUpload(interopVersion: Int, length: Int64?, metadata: ObjectMetadata, now: Date) throws(ReceiverError) -> UploadRecord {
        let id = Self.newID()
        let fd = try Syscalls.open(partPath(id), O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        defer { Syscalls.closeDescriptor(fd) }
        if syncsEveryWrite { try Syscalls.fsync(fd, context: partPath(id)) }
        let record = UploadRecord(id: id, interopVersion: interopVersion, durableOffset: 0, length: length, complete: false,
                                  objectID: nil, reservedObjectID: Self.newID(), createdAt: now, updatedAt: now,
                                  metadata: metadata, checkpointedAt: nil, bootID: bootID)
        try save(record)
        return record
    }

    /// An upload with its received length, or nil when unknown or expired (an expired one is
    /// removed). Call it holding the upload's slot, so no append is changing the length.
    func upload(_ id: String, now: Date) throws(ReceiverError) -> Resource? {
        guard let record = try record(id, now: now) else { return nil }
        if record.complete { return Resource(record: record, received: record.length ?? record.durableOffset) }
        let part = partPath(id)
        let fd: Int32
        do throws(ReceiverError) {
            fd = try Syscalls.open(part, O_RDONLY)
        } catch {
            guard error.systemErrno == ENOENT else { throw error }
            try removeUpload(id)
            return nil
        }
        defer { Syscalls.closeDescriptor(fd) }
        return Resource(record: record, received: try Syscalls.fileSize(fd, context: part))
    }

    /// fsyncs an upload's partial file and records its received length as durable, so the offset
    /// survives a machine crash. Call it holding the upload's slot.
    func makeDurable(_ upload: Resource, now: Date) throws(ReceiverError) -> Resource {
        let part = partPath(upload.record.id)
        let fd = try Syscalls.open(part, O_RDONLY)
        defer { Syscalls.closeDescriptor(fd) }
        try Syscalls.fsync(fd, context: part)
        var durable = upload
        durable.record.durableOffset = upload.received
        durable.record.updatedAt = now
        durable.record.checkpointedAt = now
        try save(durable.record, durable: true)
        return durable
    }

    /// The record of an upload, or nil when unknown or expired (an expired one is removed).
    private func record(_ id: String, now: Date) throws(ReceiverError) -> UploadRecord? {
        guard Self.isValidID(id), Syscalls.exists(recordPath(id)) else { return nil }
        let record: UploadRecord
        do {
            record = settled(try Self.decode(UploadRecord.self, at: recordPath(id)))
        } catch {
            throw ReceiverError(code: .corruptMetadata, message: "upload record \(id) is unreadable")
        }
        if hasExpired(record, now: now) {
            try removeUpload(id)
            return nil
        }
        return record
    }

    /// Whether `record` (settled) has been untouched for longer than the partial TTL at `now`.
    func hasExpired(_ record: UploadRecord, now: Date) -> Bool {
        now.timeIntervalSince(record.updatedAt) > partialTTL
    }

    /// `record` as it stands: complete when its reserved object was stored (completion does not
    /// rewrite the record, see `UploadRecord.reservedObjectID`; `ExpirySweeper` does, later),
    /// counting its age from then.
    func settled(_ record: UploadRecord) -> UploadRecord {
        guard !record.complete, let reserved = record.reservedObjectID, Self.isValidID(reserved),
              !Syscalls.exists(partPath(record.id)), let object = object(reserved) else { return record }
        var complete = record
        complete.complete = true
        complete.objectID = object.id
        complete.length = object.size
        complete.durableOffset = object.size
        complete.updatedAt = max(record.updatedAt, object.storedAt)
        return complete
    }

    /// Writes a record atomically (temporary file, rename), stamped with the current boot. With
    /// `durable`, or when `syncsEveryWrite`, the file and the directory are fsync'd too.
    func save(_ record: UploadRecord, durable: Bool = false) throws(ReceiverError) {
        var stamped = record
        stamped.bootID = bootID
        try writeAtomically(try Self.encode(stamped), to: recordPath(record.id), directory: uploadsDirectory,
                            durable: durable || syncsEveryWrite)
    }

    /// Removes an upload's record and partial bytes (the object, if one was stored, stays), and
    /// syncs the directory unless `syncDirectory` is false (the expiry sweep syncs once per pass).
    func removeUpload(_ id: String, syncDirectory: Bool = true) throws(ReceiverError) {
        guard Self.isValidID(id) else { return }
        try Syscalls.unlinkIfPresent(recordPath(id))
        try Syscalls.unlinkIfPresent(partPath(id))
        if syncDirectory { try syncUploadsDirectory() }
    }

    /// fsyncs `uploads/`, making the removals before it durable.
    func syncUploadsDirectory() throws(ReceiverError) {
        try Syscalls.fsyncDirectory(uploadsDirectory)
    }

    // MARK: For the expiry sweep

    /// The id of every upload that has a record, sorted.
    func uploadIDs() throws(ReceiverError) -> [String] {
        try Syscalls.listDirectory(uploadsDirectory).compactMap { name -> String? in
            guard name.hasSuffix(".json") else { return nil }
            let id = String(name.dropLast(5))
            return Self.isValidID(id) ? id : nil
        }.sorted()
    }

    /// An upload's record as it is on disk and as it stands (`settled`: complete once its object
    /// was stored), or nil when it is gone or unreadable. Hold the upload's slot.
    func storedRecord(_ id: String) -> (onDisk: UploadRecord, current: UploadRecord)? {
        guard Self.isValidID(id), let onDisk = try? Self.decode(UploadRecord.self, at: recordPath(id)) else { return nil }
        return (onDisk, settled(onDisk))
    }
}
