#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SystemSupport
import UploadProtocol

/// One account's store in the bucket (`serve --store s3://BUCKET/PREFIX`): the same layout as a
/// directory store, as keys under `PREFIX/` (the account `default`) or `PREFIX/accounts/<name>/`:
///
///     uploads/<id>.json            S3UploadRecord: an upload's state, changed only by conditional writes
///     uploads/<id>.tail-<w>-<n>    the bytes after an upload's last part (see S3UploadRecord)
///     objects/<id>                 finished objects' bytes (a PutObject or a completed multipart upload)
///     objects/<id>.json            their sidecars (StoredObject), written only after the bytes
///     index/<h>.json               dedupe: the first object with an idempotency key and a content
///                                  (h: SHA-256 of "key\nsha256"), created with If-None-Match: *
///     digests/<sha256>.json        the first object with a content (`by-digest`), likewise
///     files/<library path>         with `--layout path`: objects' bytes by their library path
///     names/<h>.json               which object owns a `files/` key (h: SHA-256 of the key)
///
/// An object and its sidecar appear together or not at all: every answer about objects (the
/// listing, by id, by digest, dedupe) starts from a sidecar, and the sidecar is written after the
/// object's bytes are complete, so bytes without a sidecar (an instance killed in between) are never
/// answered for; a sidecar is deleted before its bytes.
///
/// Nothing here is cached: every instance reads the bucket, so any instance answers any request.
struct S3Space: Sendable {
    let bucket: S3Bucket
    /// "" for the account `default`, `accounts/<name>/` for the others.
    let base: String
    let account: String
    /// Where finished objects' bytes go (`serve --layout`; `S3Space+PathLayout.swift`).
    let layout: ReceiverConfiguration.ObjectLayout

    /// What finishing an upload produced (as `UploadStore.Completion`).
    enum Completion: Sendable {
        case stored(StoredObject)
        case deduplicated(StoredObject)
        case digestMismatch
    }

    init(bucket: S3Bucket, account: String, layout: ReceiverConfiguration.ObjectLayout = .id) {
        self.bucket = bucket
        self.account = account
        self.layout = layout
        base = account == AccountBook.defaultAccount ? "" : "accounts/\(account)/"
    }

    func key(_ relative: String) -> String { base + relative }

    // MARK: Upload records

    /// An upload's record and its ETag, or nil when unknown.
    func record(_ id: String) throws(ReceiverError) -> (record: S3UploadRecord, etag: String)? {
        guard UploadStore.isValidID(id), let found = try bucket.get(key(S3UploadRecord.key(id))) else { return nil }
        guard let record = try? Self.decode(S3UploadRecord.self, from: found.bytes) else {
            throw ReceiverError(code: .corruptMetadata, message: "upload record \(id) is unreadable")
        }
        return (record, found.etag)
    }

    /// Writes `record` if it is new (`etag` nil) or still at `etag`; its new ETag, or nil when
    /// another writer changed it first.
    func write(_ record: S3UploadRecord, over etag: String?) throws(ReceiverError) -> String? {
        let written = try bucket.put(key(S3UploadRecord.key(record.id)), try UploadStore.encode(record),
                                     condition: etag.map { .matches($0) } ?? .absent)
        switch written {
        case .written(let etag): return etag
        case .conflict: return nil
        }
    }

    /// Removes an upload: its record, its tail and its multipart upload's parts (the object, if
    /// one was stored, stays).
    func removeUpload(_ record: S3UploadRecord) throws(ReceiverError) {
        try bucket.delete(key(S3UploadRecord.key(record.id)))
        if let tail = record.tail { try bucket.delete(key(tail.key)) }
        if let multipartID = record.multipartID, !record.complete {
            try bucket.abortMultipartUpload(key(Self.objectKey(record.reservedObjectID)), uploadID: multipartID)
        }
    }

    static func objectKey(_ id: String) -> String { "objects/\(id)" }
    static func sidecarKey(_ id: String) -> String { "objects/\(id).json" }

    // MARK: Objects

    /// One object's sidecar, or nil when it has none (bytes without a sidecar are not an object).
    func object(_ id: String) throws(ReceiverError) -> StoredObject? {
        guard UploadStore.isValidID(id), let found = try bucket.get(key(Self.sidecarKey(id))) else { return nil }
        return try? Self.decode(StoredObject.self, from: found.bytes)
    }

    /// The first object stored with this content (64 lowercase hex digits), or nil.
    func object(sha256Hex: String) throws(ReceiverError) -> StoredObject? {
        guard let entry = try bucket.get(key("digests/\(sha256Hex).json")),
              let pointer = try? Self.decode(Pointer.self, from: entry.bytes),
              let object = try object(pointer.objectID), object.sha256 == sha256Hex else { return nil }
        return object
    }

    /// Every object with a sidecar, oldest first.
    func objects() throws(ReceiverError) -> [StoredObject] {
        var found: [StoredObject] = []
        for name in try bucket.list(key("objects/")) where name.hasSuffix(".json") {
            let id = String(name.dropFirst(key("objects/").count).dropLast(5))
            if let object = try object(id) { found.append(object) }
        }
        return found.sorted { ($0.storedAt, $0.id) < ($1.storedAt, $1.id) }
    }

    /// The bytes of every object stored in this space (by a listing of `objects/`, and of `files/`
    /// under `--layout path`: each object's bytes, not its sidecar): what an account's quota is
    /// weighed against.
    func storedBytes() throws(ReceiverError) -> Int64 {
        let byID = try bucket.listSized(key("objects/")).reduce(Int64(0)) { total, entry in
            entry.key.hasSuffix(".json") ? total : total + entry.size
        }
        return byID + (layout == .path ? try bucket.listSized(key("files/")).reduce(Int64(0)) { $0 + $1.size } : 0)
    }

    /// An index entry: the object that holds a key's (or a digest's) content.
    struct Pointer: Codable, Sendable {
        var objectID: String
    }

    // MARK: Completion

    /// Makes the object of an upload of `length` bytes: one PutObject of `bytes` (the whole upload,
    /// when it never needed a part), or CompleteMultipartUpload of the record's parts (committed, all
    /// `length` bytes of them). The digest is computed from the
    /// bytes (or the object read back), so what the receiver answers is what the bucket holds. Then
    /// dedupe by key and content, the sidecar, the digest index, as `UploadStore.complete` does.
    /// `known`: the SHA-256 the completing request computed from every byte (no read-back then).
    func complete(_ record: S3UploadRecord, bytes: [UInt8]?, length: Int64, sha256 known: [UInt8]? = nil, now: Date,
                  pause: Double = 0) throws(ReceiverError) -> Completion {
        let objectKey = key(Self.objectKey(record.reservedObjectID))
        // An earlier attempt may have finished this upload's object (and sidecar) already.
        if let existing = try object(record.reservedObjectID) { return .stored(existing) }
        let digest: [UInt8]
        let size: Int64
        if let multipartID = record.multipartID {
            try bucket.completeMultipartUpload(objectKey, uploadID: multipartID, parts: record.parts.map { ($0.number, $0.etag) })
            if let known, let stored = try bucket.size(of: objectKey) {
                // Every byte passed through the completing request (hashed as it arrived).
                (digest, size) = (known, stored)
            } else {
                // Bytes from several requests (or instances): the object is read back and hashed.
                guard let hashed = try bucket.sha256(of: objectKey) else {
                    throw ReceiverError(code: .io, message: "the completed object \(record.reservedObjectID) is not in the bucket")
                }
                (digest, size) = hashed
            }
            if let tail = record.tail { try? bucket.delete(key(tail.key)) }
        } else {
            let whole = bytes ?? []
            _ = try bucket.put(objectKey, whole)
            digest = try Self.sha256(whole)
            size = Int64(whole.count)
        }
        guard size == length else {
            throw ReceiverError(code: .io, message: "the bucket holds \(size) bytes of upload \(record.id), not \(length)")
        }
        let digestHex = Hex.string(digest)
        if let expected = record.metadata.expectedSHA256, expected != digest {
            try bucket.delete(objectKey)
            return .digestMismatch
        }
        let metadata = record.metadata
        let indexKey = metadata.idempotencyKey.map { key("index/" + Hex.string((try? Self.sha256(Array(UploadStore.indexKey($0, sha256Hex: digestHex).utf8))) ?? []) + ".json") }
        // A duplicate stored first answers at once; this upload's bytes go.
        if let indexKey, let first = try firstObject(at: indexKey, sha256Hex: digestHex), first.object.id != record.reservedObjectID {
            try bucket.delete(objectKey)
            return .deduplicated(first.object)
        }
        var object = StoredObject(id: record.reservedObjectID, size: size, sha256: digestHex, idempotencyKey: metadata.idempotencyKey,
                                  filename: metadata.filename, verdict: metadata.verdict, storedAt: now,
                                  filenameEncoded: metadata.filenameEncoded, provenance: metadata.provenance)
        object.device = metadata.device
        let placed = layout == .path ? try placeByPath(&object, from: objectKey, libraryPath: metadata.provenance?.pathBytes, now: now) : nil
        switch try bucket.put(key(Self.sidecarKey(object.id)), try UploadStore.encode(object), condition: .absent) {
        case .written:
            // The sidecar names the placed copy: the one under the id goes.
            if placed != nil { try? bucket.delete(objectKey) }
        case .conflict:
            // Another instance finished this same upload meanwhile: its sidecar stands.
            if let existing = try self.object(object.id) { return .stored(existing) }
            throw ReceiverError(code: .io, message: "the sidecar of \(object.id) was written and is gone")
        }
        if pause > 0 { usleep(UInt32(pause * 1_000_000)) }
        if let indexKey, try !claim(indexKey, for: object.id, sha256Hex: digestHex) {
            // Another upload of the same key and content won the index while this one was stored:
            // the first object stands and this one goes, sidecar first (never bytes without one).
            if let first = try firstObject(at: indexKey, sha256Hex: digestHex) {
                try bucket.delete(key(Self.sidecarKey(object.id)))
                try bucket.delete(objectKey)
                if let placed { releaseName(placed, of: object.id) }
                return .deduplicated(first.object)
            }
        }
        _ = try claim(key("digests/\(digestHex).json"), for: object.id, sha256Hex: digestHex)
        return .stored(object)
    }

    /// The object an index entry names, when it exists and has that content.
    private func firstObject(at indexKey: String, sha256Hex: String) throws(ReceiverError) -> (object: StoredObject, etag: String)? {
        guard let entry = try bucket.get(indexKey), let pointer = try? Self.decode(Pointer.self, from: entry.bytes),
              let object = try object(pointer.objectID), object.sha256 == sha256Hex else { return nil }
        return (object, entry.etag)
    }

    /// Makes the index entry at `indexKey` name `objectID` unless it names an existing object with
    /// the same content already (If-None-Match: *, or If-Match over an entry whose object is
    /// gone); true when this object is the one it names.
    private func claim(_ indexKey: String, for objectID: String, sha256Hex: String) throws(ReceiverError) -> Bool {
        let pointer = try UploadStore.encode(Pointer(objectID: objectID))
        for _ in 0..<4 {
            if case .written = try bucket.put(indexKey, pointer, condition: .absent) { return true }
            guard let entry = try bucket.get(indexKey) else { continue }
            let named = (try? Self.decode(Pointer.self, from: entry.bytes))?.objectID
            if named == objectID { return true }
            if let named, let object = try object(named), object.sha256 == sha256Hex { return false }
            if case .written = try bucket.put(indexKey, pointer, condition: .matches(entry.etag)) { return true }
        }
        return false
    }

    static func sha256(_ bytes: [UInt8]) throws(ReceiverError) -> [UInt8] {
        do throws(SystemError) {
            return try SHA256.digest(bytes)
        } catch {
            throw ReceiverError(code: .io, message: "cannot hash: \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(T.self, from: Data(bytes))
    }
}
