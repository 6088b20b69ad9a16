#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import SystemSupport
import UploadProtocol

/// Everything the receiver keeps on disk, under one directory and nowhere else:
///
///     objects/<id>          finished objects (renamed in whole, so never seen partial)
///     objects/<id>.json     their sidecars (StoredObject); an object is listed only once this exists
///     uploads/<id>.part     bytes of a resumable upload so far (its length is the upload's offset)
///     uploads/<id>.json     its UploadRecord (written at creation and at checkpoints; completing the
///                           upload stores the object under the record's reserved id and leaves
///                           the record as it is, so the hot path creates files and deletes none;
///                           the background ExpirySweeper then writes it as complete)
///     tmp/                  staging for plain uploads and metadata writes; emptied at start
///     files/<library path>  with `--layout path`: objects' bytes by their `X-Photo-Path` (the
///                           sidecar, still `objects/<id>.json`, names it in `storedPath`)
///
/// Ids are generated here (32 hex digits) and every id from a request is checked against that
/// shape before it touches a path, so no request can name a file outside the directory.
///
/// Durability: an object is fsync'd, renamed into `objects/` and its sidecar written and fsync'd
/// (one directory fsync covers both renames) before it is acknowledged. Partial uploads are
/// fsync'd as `ReceiverConfiguration.SyncMode` says; their bytes are written in order, so a
/// partial file always holds a prefix of the upload, and after a process kill its length is
/// still the offset the receiver last reported.
final class UploadStore: Sendable {
    /// An upload resource as a request finds it.
    struct Resource: Sendable {
        var record: UploadRecord
        /// Bytes received so far: the partial file's length (the whole length once complete).
        var received: Int64
    }

    /// What finishing an upload produced.
    enum Completion: Sendable {
        /// A new object was stored.
        case stored(StoredObject)
        /// An object with the same idempotency key existed: nothing new was stored.
        case deduplicated(StoredObject)
        /// The bytes do not match the client's `Repr-Digest`; nothing was stored.
        case digestMismatch
    }

    let root: String
    let objectsDirectory: String
    let uploadsDirectory: String
    let temporaryDirectory: String
    private let partialTTL: Double
    /// Where finished objects' bytes go.
    let layout: ReceiverConfiguration.ObjectLayout
    /// `files/`: the root of `ObjectLayout.path`.
    let filesDirectory: String
    /// The current kernel boot, recorded with every upload record; nil when unknown.
    let bootID: String?
    /// Whether records and new partial files are fsync'd when written (`SyncMode.always`, or an
    /// unknown boot). Objects and checkpoints are fsync'd regardless.
    let syncsEveryWrite: Bool
    /// (idempotency key, content SHA-256) -> object id, rebuilt from the sidecars at start. An
    /// upload dedupes only to an object with its own key *and* its own content: anyone may POST
    /// with any key, so a key alone would let junk stored first stand in for the real photo.
    private let index: Mutex<[String: String]>
    /// Content SHA-256 (hex) -> the first object stored with it, for `object(sha256Hex:)`. The
    /// receiver computed each digest itself, so an object found here holds exactly those bytes.
    private let digestIndex: Mutex<[String: String]>

    /// The index entry for a key and a content digest (hex).
    private static func indexKey(_ idempotencyKey: String, sha256Hex: String) -> String {
        idempotencyKey + "\n" + sha256Hex
    }

    /// Opens (creating if needed) the store in `directory`, empties `tmp/`, removes objects whose
    /// sidecar was never written, and settles each partial upload's length: kept as it is when the
    /// machine has not rebooted since it was written (only cut to the record's announced length),
    /// cut back to its last fsync'd offset when it has, or when the boot is unknown.
    init(directory: String, partialTTL: Double, bootID: String?, syncMode: ReceiverConfiguration.SyncMode,
         layout: ReceiverConfiguration.ObjectLayout = .id) throws(ReceiverError) {
        root = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        objectsDirectory = root + "/objects"
        uploadsDirectory = root + "/uploads"
        temporaryDirectory = root + "/tmp"
        filesDirectory = root + "/files"
        self.layout = layout
        self.partialTTL = partialTTL
        self.bootID = bootID
        syncsEveryWrite = syncMode == .always || bootID == nil
        for path in [root, objectsDirectory, uploadsDirectory, temporaryDirectory] {
            try Syscalls.makeDirectory(path)
        }
        for name in try Syscalls.listDirectory(temporaryDirectory) {
            try Syscalls.unlinkIfPresent(temporaryDirectory + "/" + name)
        }
        var keys: [String: String] = [:]
        var digests: [String: String] = [:]
        let objectNames = Set(try Syscalls.listDirectory(objectsDirectory))
        for name in objectNames where Self.isValidID(name) {
            guard objectNames.contains(name + ".json"),
                  let object = try? Self.decode(StoredObject.self, at: objectsDirectory + "/" + name + ".json") else {
                try Syscalls.unlinkIfPresent(objectsDirectory + "/" + name)
                continue
            }
            if let key = object.idempotencyKey {
                let entry = Self.indexKey(key, sha256Hex: object.sha256)
                if keys[entry] == nil { keys[entry] = object.id }
            }
            if digests[object.sha256] == nil { digests[object.sha256] = object.id }
        }
        // Objects stored by path (`--layout path`) have a sidecar and no bytes in objects/.
        for name in objectNames where name.hasSuffix(".json") {
            let id = String(name.dropLast(5))
            guard Self.isValidID(id), !objectNames.contains(id),
                  let object = try? Self.decode(StoredObject.self, at: objectsDirectory + "/" + name),
                  let stored = object.storedPath.flatMap(Provenance.percentDecode), !stored.isEmpty,
                  Syscalls.exists(bytes: Array(root.utf8) + [0x2F] + stored) else { continue }
            if let key = object.idempotencyKey {
                let entry = Self.indexKey(key, sha256Hex: object.sha256)
                if keys[entry] == nil { keys[entry] = object.id }
            }
            if digests[object.sha256] == nil { digests[object.sha256] = object.id }
        }
        index = Mutex(keys)
        digestIndex = Mutex(digests)
        let uploadNames = Set(try Syscalls.listDirectory(uploadsDirectory))
        for name in uploadNames where name.hasSuffix(".part") {
            let id = String(name.dropLast(5))
            if !uploadNames.contains(id + ".json") { try Syscalls.unlinkIfPresent(uploadsDirectory + "/" + name) }
        }
        for name in uploadNames where name.hasSuffix(".json") {
            let id = String(name.dropLast(5))
            guard Self.isValidID(id), let decoded = try? Self.decode(UploadRecord.self, at: uploadsDirectory + "/" + name) else {
                try Syscalls.unlinkIfPresent(uploadsDirectory + "/" + name)
                continue
            }
            let record = settled(decoded)
            if record.complete { continue }
            let part = partPath(id)
            guard Syscalls.exists(part) else {
                try removeUpload(id)
                continue
            }
            let fd = try Syscalls.open(part, O_WRONLY)
            defer { Syscalls.closeDescriptor(fd) }
            let size = try Syscalls.fileSize(fd, context: part)
            if let bootID, record.bootID == bootID {
                // Same boot: every byte written is still there (the page cache outlives a process).
                if let length = record.length, size > length { try Syscalls.truncate(fd, length: length, context: part) }
                continue
            }
            // Rebooted (or unknown): bytes past the last fsync may be lost or garbage on disk.
            var settled = record
            if size > record.durableOffset {
                try Syscalls.truncate(fd, length: record.durableOffset, context: part)
                try Syscalls.fsync(fd, context: part)
            }
            settled.durableOffset = min(size, record.durableOffset)
            try save(settled, durable: true)
        }
    }

    /// The current boot's id read from `path` (`/proc/sys/kernel/random/boot_id`), or nil.
    static func bootID(at path: String) -> String? {
        guard let bytes = try? Syscalls.readPseudoFile(path, limit: 4096) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// True for ids this store could have generated: 32 lowercase hex digits.
    static func isValidID(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// A fresh random id.
    static func newID() -> String { Hex.string(Syscalls.randomBytes(16)) }

    func partPath(_ id: String) -> String { uploadsDirectory + "/" + id + ".part" }
    private func recordPath(_ id: String) -> String { uploadsDirectory + "/" + id + ".json" }
    func objectPath(_ id: String) -> String { objectsDirectory + "/" + id }
    private func sidecarPath(_ id: String) -> String { objectsDirectory + "/" + id + ".json" }

    // MARK: Resumable uploads

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
    private func settled(_ record: UploadRecord) -> UploadRecord {
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

    // MARK: Objects

    /// A path in `tmp/` for staging a plain upload.
    func stagingPath() -> String { temporaryDirectory + "/" + Self.newID() + ".upload" }

    /// Turns fsync'd bytes at `stagedPath` into an object: checks the digest, dedupes by idempotency
    /// key and content (an object with the same key but other bytes is not a duplicate), renames
    /// the bytes into `objects/`, then writes the sidecar. The staged file is gone afterwards
    /// unless an error is thrown (then it is left in place for the caller).
    /// `sha256` is the digest computed while the bytes streamed in, when they all came in one
    /// request; otherwise the file is read back to compute it. A new object is stored under
    /// `reservedID` when one is given (a resumable upload's, see `UploadRecord.reservedObjectID`).
    func complete(stagedPath: String, size: Int64, metadata: ObjectMetadata, sha256: [UInt8]?, reservedID: String? = nil,
                  now: Date) throws(ReceiverError) -> Completion {
        let digest: [UInt8]
        if let sha256 { digest = sha256 } else { digest = try translatingSystemErrors(ReceiverError.init) { () throws(SystemError) in try SHA256.digest(path: stagedPath) } }
        if let expected = metadata.expectedSHA256, expected != digest {
            try Syscalls.unlinkIfPresent(stagedPath)
            return .digestMismatch
        }
        let digestHex = Hex.string(digest)
        let entry = metadata.idempotencyKey.map { Self.indexKey($0, sha256Hex: digestHex) }
        return try index.withLock { keys throws(ReceiverError) -> Completion in
            if let entry, let existing = keys[entry],
               let object = try? Self.decode(StoredObject.self, at: sidecarPath(existing)), object.sha256 == digestHex {
                // A duplicate only while the first copy's bytes are really there: an object whose
                // file was lost (deleted, cut short) is stored again, and its stale sidecar goes,
                // or the client would be told its photo is held when it is not.
                if Syscalls.regularFileSize(bytes: contentPath(of: object)) == object.size {
                    try Syscalls.unlinkIfPresent(stagedPath)
                    return .deduplicated(object)
                }
                try Syscalls.unlinkIfPresent(sidecarPath(existing))
                keys[entry] = nil
                digestIndex.withLock { digests in
                    if digests[digestHex] == existing { digests[digestHex] = nil }
                }
            }
            let id: String
            if let reservedID, Self.isValidID(reservedID), !Syscalls.exists(objectPath(reservedID)) {
                id = reservedID
            } else {
                id = Self.newID()
            }
            var object = StoredObject(id: id, size: size, sha256: digestHex,
                                      idempotencyKey: metadata.idempotencyKey, filename: metadata.filename,
                                      verdict: metadata.verdict, storedAt: now, filenameEncoded: metadata.filenameEncoded,
                                      provenance: metadata.provenance)
            var placed: [UInt8]?
            do throws(ReceiverError) {
                // The sidecar's directory fsync makes both renames durable. A crash in between can
                // leave the object without a sidecar, which the next start removes: it was never
                // acknowledged.
                if layout == .path, let library = metadata.provenance?.pathBytes,
                   let stored = try placeByPath(stagedPath, libraryPath: library, sha256Hex: digestHex, id: id) {
                    placed = stored
                    object.storedPath = Provenance.percentEncode(stored)
                } else {
                    if layout == .path {
                        // Said in the sidecar (and the request's log line): never silently elsewhere.
                        object.layoutNote = "stored as objects/\(id): " + (metadata.provenance?.pathBytes.map(Self.pathLayoutProblem)
                            ?? "the upload named no library path (X-Photo-Path)")
                    }
                    try Syscalls.rename(stagedPath, objectPath(id))
                }
                try writeAtomically(try Self.encode(object), to: sidecarPath(id), directory: objectsDirectory, durable: true)
            } catch {
                // Put the bytes back where the caller expects them (a resumable upload can then be
                // completed again); never leave an object without its sidecar.
                if let placed {
                    let full = Array(root.utf8) + [0x2F] + placed
                    if (try? Syscalls.rename(bytes: full, stagedPath)) == nil { try? Syscalls.unlinkIfPresent(bytes: full) }
                } else if Syscalls.exists(objectPath(id)) && (try? Syscalls.rename(objectPath(id), stagedPath)) == nil {
                    try? Syscalls.unlinkIfPresent(objectPath(id))
                }
                throw error
            }
            if let entry { keys[entry] = id }
            digestIndex.withLock { digests in
                if digests[digestHex] == nil { digests[digestHex] = id }
            }
            return .stored(object)
        }
    }

    /// Moves staged bytes to `files/<library path>` (`ObjectLayout.path`) and returns where they
    /// went, relative to the root; nil (nothing moved) when the path cannot be made, and the
    /// object goes to `objects/<id>`. The name is never replaced: a link that finds the name taken
    /// tries `~<12 hex of the SHA-256>`, then `~<id>`, before the extension. Throws for other
    /// file-system failures.
    /// Why `--layout path` cannot place a library path, in words.
    static func pathLayoutProblem(_ libraryPath: [UInt8]) -> String {
        let components = libraryPath.split(separator: 0x2F, omittingEmptySubsequences: true).filter { $0.elementsEqual([0x2E]) == false }
        if components.isEmpty { return "the library path names no file" }
        if components.count > 64 { return "the library path is \(components.count) folders deep (at most 64)" }
        if components.contains(where: { $0.contains(0) }) { return "the library path holds a NUL byte" }
        if components.contains(where: { $0.count + 1 + 64 > 255 }) { return "a name in the library path is too long for a file name (over 190 bytes)" }
        return "the library path cannot be made under files/"
    }

    private func placeByPath(_ stagedPath: String, libraryPath: [UInt8], sha256Hex: String, id: String) throws(ReceiverError) -> [UInt8]? {
        var components: [[UInt8]] = []
        for part in libraryPath.split(separator: 0x2F, omittingEmptySubsequences: true) {
            let component = Array(part)
            if component == [0x2E] { continue }                                  // "."
            components.append(component == [0x2E, 0x2E] ? [0x5F, 0x5F] : component)   // ".." never climbs: "__"
        }
        guard let leaf = components.popLast(), components.count < 64,
              (components + [leaf]).allSatisfy({ !$0.contains(0) && $0.count + 1 + 64 <= 255 }) else { return nil }
        let rootBytes = Array(root.utf8)
        var directory = Array("files".utf8)
        var created: [[UInt8]] = []
        do throws(ReceiverError) {
            try Syscalls.makeDirectory(bytes: rootBytes + [0x2F] + directory)
            for component in components {
                directory += [0x2F] + component
                let full = rootBytes + [0x2F] + directory
                if !Syscalls.exists(bytes: full) { created.append(full) }
                try Syscalls.makeDirectory(bytes: full)
            }
        } catch {
            // A file where a folder should be (or a name the file system refuses): keep the
            // object under its id rather than fail the upload.
            guard error.systemErrno == ENOTDIR || error.systemErrno == ENAMETOOLONG || error.systemErrno == EINVAL else { throw error }
            return nil
        }
        let dot = leaf.lastIndex(of: 0x2E).flatMap { $0 > 0 ? $0 : nil }
        let stem = Array(dot.map { leaf[..<$0] } ?? leaf[...])
        let ext = Array(dot.map { leaf[$0...] } ?? [])
        let candidates = [leaf, stem + Array("~\(sha256Hex.prefix(12))".utf8) + ext, stem + Array("~\(id)".utf8) + ext]
        for candidate in candidates {
            let relative = directory + [0x2F] + candidate
            let full = rootBytes + [0x2F] + relative
            if try Syscalls.linkUnlessPresent(stagedPath, to: full) {
                try Syscalls.unlinkIfPresent(stagedPath)
                try Syscalls.fsyncDirectory(bytes: rootBytes + [0x2F] + directory)
                for made in created.reversed() {
                    try Syscalls.fsyncDirectory(bytes: Array(made[..<(made.lastIndex(of: 0x2F) ?? made.endIndex)]))
                }
                return relative
            }
        }
        return nil
    }

    /// Where an object's bytes are: `objects/<id>`, or its `storedPath` under `--layout path`.
    func contentPath(of object: StoredObject) -> [UInt8] {
        if let stored = object.storedPath, let relative = Provenance.percentDecode(stored), !relative.isEmpty {
            return Array(root.utf8) + [0x2F] + relative
        }
        return Array(objectPath(object.id).utf8)
    }

    /// Every stored object, oldest first.
    func objects() throws(ReceiverError) -> [StoredObject] {
        var found: [StoredObject] = []
        for name in try Syscalls.listDirectory(objectsDirectory) where name.hasSuffix(".json") {
            let id = String(name.dropLast(5))
            if Self.isValidID(id), let object = try? Self.decode(StoredObject.self, at: sidecarPath(id)) {
                found.append(object)
            }
        }
        return found.sorted { ($0.storedAt, $0.id) < ($1.storedAt, $1.id) }
    }

    /// A stored object whose content has the SHA-256 `sha256Hex` (64 lowercase hex digits), or
    /// nil. Its sidecar is read back and its content file must be there at its size, so an object
    /// removed from disk (or cut short) is not reported: clients take this answer as proof that
    /// the receiver holds the bytes (`photodrain verify`, the hash pre-check).
    func object(sha256Hex: String) -> StoredObject? {
        guard let id = digestIndex.withLock({ $0[sha256Hex] }),
              let object = object(id), object.sha256 == sha256Hex,
              Syscalls.regularFileSize(bytes: contentPath(of: object)) == object.size else { return nil }
        return object
    }

    /// One stored object's sidecar, or nil.
    func object(_ id: String) -> StoredObject? {
        guard Self.isValidID(id) else { return nil }
        return try? Self.decode(StoredObject.self, at: sidecarPath(id))
    }

    // MARK: Files

    /// Writes `bytes` to `path` so that a reader sees the old or the new content, never a mix:
    /// a file in `tmp/` renamed over `path`. With `durable` the file is fsync'd before the rename
    /// and the directory after it, so the new content also survives a machine crash.
    private func writeAtomically(_ bytes: [UInt8], to path: String, directory: String, durable: Bool) throws(ReceiverError) {
        let staging = temporaryDirectory + "/" + Self.newID() + ".json"
        do {
            let fd = try Syscalls.open(staging, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            defer { Syscalls.closeDescriptor(fd) }
            try Syscalls.withBytes(bytes) { raw throws(ReceiverError) in try Syscalls.writeAll(fd, raw, context: staging) }
            if durable { try Syscalls.fsync(fd, context: staging) }
        } catch {
            try? Syscalls.unlinkIfPresent(staging)
            throw error
        }
        try Syscalls.rename(staging, path)
        if durable { try Syscalls.fsyncDirectory(directory) }
    }

    private static func encode(_ value: some Encodable) throws(ReceiverError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw ReceiverError(code: .io, message: "cannot encode metadata: \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, at path: String) throws -> T {
        let bytes = try Syscalls.readFile(path, limit: 1 << 20)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(T.self, from: Data(bytes))
    }

    /// JSON for responses (listing, sidecars).
    static func json(_ value: some Encodable) -> [UInt8] {
        (try? encode(value)) ?? Array("null".utf8)
    }
}
