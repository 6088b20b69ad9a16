import Foundation
import SystemSupport
import Transfer

/// One request's bytes on their way into an upload in the bucket: it claims the upload's record
/// (`S3UploadRecord`), turns the bytes into parts of `partSize` as they arrive (each part committed
/// to the record before the next), and keeps a shorter remainder as the record's tail object when
/// the body ends, so every byte the record counts survives the instance's death. Each commit is an
/// `If-Match` write on the ETag this writer last wrote: once another request has claimed the
/// upload, the next commit fails and the writer stops (`superseded`), never having changed what
/// the other request sees.
final class S3UploadWriter {
    let space: S3Space
    let partSize: Int
    private(set) var record: S3UploadRecord
    private(set) var etag: String
    /// This claim's token (`S3UploadRecord.writer`).
    let token = UploadStore.newID()
    /// The next part number of this claim's block, and the block's end.
    private var nextNumber: Int
    private var blockEnd: Int
    /// The bytes after the record's parts: the tail's bytes (read back at the claim), then the new ones.
    private(set) var buffer: [UInt8] = []
    private var tailWrites = 0
    /// Set once a commit lost to another writer.
    private(set) var superseded = false
    /// The SHA-256 of every byte so far, while this request has seen them all (it began at offset
    /// 0): completion then needs no read-back. Each part went with its payload's SHA-256 signed
    /// (`x-amz-content-sha256`), which S3 checks, so these are the bytes the bucket holds.
    private var hasher: SHA256?

    /// What a claim came to.
    enum Claim {
        case claimed(S3UploadWriter)
        /// Another request changed the record first.
        case lost
    }

    private init(space: S3Space, partSize: Int, record: S3UploadRecord, etag: String, nextNumber: Int, blockEnd: Int) {
        self.space = space
        self.partSize = partSize
        self.record = record
        self.etag = etag
        self.nextNumber = nextNumber
        self.blockEnd = blockEnd
    }

    /// Claims `record` (read at `etag`; nil for a new record, which this creates), taking a block of
    /// part numbers, and reads its tail back.
    static func claim(_ record: S3UploadRecord, etag: String?, space: S3Space, partSize: Int, now: Date) throws(ReceiverError) -> Claim {
        var claimed = record
        let first = record.nextPartNumber
        guard first + S3UploadRecord.partNumberBlock - 1 <= S3UploadRecord.maximumPartNumber else {
            throw ReceiverError(code: .invalidState, message: "upload \(record.id) has used every S3 part number")
        }
        claimed.nextPartNumber = first + S3UploadRecord.partNumberBlock
        claimed.updatedAt = now
        let writer = S3UploadWriter(space: space, partSize: partSize, record: claimed, etag: "", nextNumber: first,
                                    blockEnd: first + S3UploadRecord.partNumberBlock)
        writer.record.writer = writer.token
        guard let written = try space.write(writer.record, over: etag) else { return .lost }
        writer.etag = written
        if record.offset == 0 { writer.hasher = try? SHA256() }
        if let tail = record.tail {
            guard let bytes = try space.bucket.get(space.key(tail.key))?.bytes, bytes.count == tail.size else {
                throw ReceiverError(code: .corruptMetadata, message: "the tail of upload \(record.id) is missing or cut short")
            }
            writer.buffer = bytes
        }
        return .claimed(writer)
    }

    /// Bytes the record holds plus what is buffered: the offset once everything is committed.
    var received: Int64 { record.offset - (record.tail?.size ?? 0) + Int64(buffer.count) }

    /// Takes a piece of the body; uploads and commits every whole part it completes. False once
    /// superseded.
    func take(_ bytes: UnsafeRawBufferPointer, now: Date) throws(ReceiverError) -> Bool {
        do { try hasher?.update(bytes) } catch { hasher = nil }
        buffer.append(contentsOf: bytes)
        while buffer.count >= partSize {
            guard try commitPart(Array(buffer[0..<partSize]), now: now) else { return false }
            buffer.removeFirst(partSize)
        }
        return true
    }

    /// Commits what is buffered as the record's new tail (the body ended without completing the
    /// upload, or was cut). False once superseded.
    func saveTail(now: Date) throws(ReceiverError) -> Bool {
        if superseded { return false }
        let held = record.tail?.size ?? 0
        guard Int64(buffer.count) != held || (buffer.isEmpty && record.tail != nil) else { return true }
        var next = record
        let old = record.tail
        if buffer.isEmpty {
            next.tail = nil
        } else {
            tailWrites += 1
            let key = "uploads/\(record.id).tail-\(token)-\(tailWrites)"
            _ = try space.bucket.put(space.key(key), buffer)
            next.tail = .init(key: key, size: Int64(buffer.count))
        }
        next.updatedAt = now
        guard try commit(next) else {
            if let tail = next.tail { try? space.bucket.delete(space.key(tail.key)) }
            return false
        }
        if let old { try? space.bucket.delete(space.key(old.key)) }
        return true
    }

    /// Makes every byte of a completing upload committed and confirms this writer still holds the
    /// upload: the buffer goes as the last part when the upload has a multipart upload, and stays
    /// in memory (the whole upload, under a part's size) for one PutObject otherwise. Returns the
    /// bytes for that PutObject, or nil for a multipart upload; throws nothing for a lost claim,
    /// which `superseded` tells.
    func commitForCompletion(now: Date) throws(ReceiverError) -> [UInt8]? {
        if record.multipartID != nil {
            if !buffer.isEmpty {
                guard try commitPart(buffer, now: now) else { return nil }
                buffer = []
                return nil
            }
        }
        var next = record
        next.updatedAt = now
        _ = try commit(next)
        return record.multipartID == nil ? buffer : nil
    }

    /// The whole upload's SHA-256 when this request received every byte of it, else nil. Call it
    /// once, when the body is complete.
    func finishDigest() -> [UInt8]? {
        defer { hasher = nil }
        return try? hasher?.finish()
    }

    /// Writes the record as complete with its object of `length` bytes (the tail, now inside the
    /// object, goes).
    func commitCompletion(objectID: String, length: Int64, now: Date) throws(ReceiverError) -> Bool {
        var next = record
        let old = next.tail
        next.complete = true
        next.objectID = objectID
        next.length = length
        next.tail = nil
        next.updatedAt = now
        guard try commit(next) else { return false }
        if let old { try? space.bucket.delete(space.key(old.key)) }
        return true
    }

    /// Uploads `bytes` as the next part and commits it (the tail, whose bytes begin it, goes).
    private func commitPart(_ bytes: [UInt8], now: Date) throws(ReceiverError) -> Bool {
        if superseded { return false }
        if nextNumber == blockEnd {
            // A new block, reserved before any number of it is used.
            var next = record
            let first = next.nextPartNumber
            guard first + S3UploadRecord.partNumberBlock - 1 <= S3UploadRecord.maximumPartNumber else {
                throw ReceiverError(code: .invalidState, message: "upload \(record.id) has used every S3 part number")
            }
            next.nextPartNumber = first + S3UploadRecord.partNumberBlock
            guard try commit(next) else { return false }
            nextNumber = first
            blockEnd = first + S3UploadRecord.partNumberBlock
        }
        var next = record
        let objectKey = space.key(S3Space.objectKey(record.reservedObjectID))
        let multipartID: String
        if let existing = record.multipartID { multipartID = existing } else { multipartID = try space.bucket.createMultipartUpload(objectKey) }
        let etag = try space.bucket.uploadPart(objectKey, uploadID: multipartID, number: nextNumber, bytes)
        let old = next.tail
        next.multipartID = multipartID
        next.parts.append(.init(number: nextNumber, etag: etag, size: Int64(bytes.count)))
        next.tail = nil
        next.updatedAt = now
        guard try commit(next) else { return false }
        nextNumber += 1
        if let old { try? space.bucket.delete(space.key(old.key)) }
        return true
    }

    /// Writes `next` over the version this writer last wrote; false (and `superseded`) when
    /// another request changed the record.
    private func commit(_ next: S3UploadRecord) throws(ReceiverError) -> Bool {
        guard let written = try space.write(next, over: etag) else {
            superseded = true
            return false
        }
        record = next
        etag = written
        return true
    }
}
