#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import SystemSupport
import UploadProtocol

/// Everything one account's space keeps on disk (`AccountSpaces`: the receiver's directory for
/// the account `default`, `accounts/<name>/` under it for every other), under one directory and
/// nowhere else:
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
///     quarantine/<id>       objects whose bytes no longer hash to their digest, moved aside with
///     quarantine/<id>.json  their sidecar (which says why, when and from where); never deleted,
///                           never answered for (`UploadStore+Integrity.swift`); made when needed
///
/// Ids are generated here (32 hex digits) and every id from a request is checked against that
/// shape before it touches a path, so no request can name a file outside the directory.
///
/// Durability: an object is fsync'd, renamed into `objects/` and its sidecar written and fsync'd
/// (one directory fsync covers both renames) before it is acknowledged. Partial uploads are
/// fsync'd as `ReceiverConfiguration.SyncMode` says; their bytes are written in order, so a
/// partial file always holds a prefix of the upload, and after a process kill its length is
/// still the offset the receiver last reported.
///
/// This file opens the store and writes its files; what happens in `uploads/` is in
/// `UploadStore+Uploads.swift`, in `objects/` and `files/` in `UploadStore+Objects.swift`, and the
/// checks that a stored object's file is still the one that was hashed in `UploadStore+Integrity.swift`.
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
    /// `quarantine/`: corrupt objects and their sidecars, moved aside.
    let quarantineDirectory: String
    /// Where the store reports what it did on its own (an object moved to quarantine).
    let log: @Sendable (String) -> Void
    let partialTTL: Double
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
    let index: Mutex<[String: String]>
    /// Content SHA-256 (hex) -> the first object stored with it, for `object(sha256Hex:)`. The
    /// receiver computed each digest itself, so an object found here holds exactly those bytes.
    let digestIndex: Mutex<[String: String]>
    /// The bytes of every object stored (each object once, by its sidecar's size), summed at start
    /// and counted up as objects are stored: what an account's quota is weighed against.
    let storedBytes: Mutex<Int64>

    /// The index entry for a key and a content digest (hex).
    static func indexKey(_ idempotencyKey: String, sha256Hex: String) -> String {
        idempotencyKey + "\n" + sha256Hex
    }

    /// Opens (creating if needed) the store in `directory`, empties `tmp/`, removes objects whose
    /// sidecar was never written, and settles each partial upload's length: kept as it is when the
    /// machine has not rebooted since it was written (only cut to the record's announced length),
    /// cut back to its last fsync'd offset when it has, or when the boot is unknown.
    init(directory: String, partialTTL: Double, bootID: String?, syncMode: ReceiverConfiguration.SyncMode,
         layout: ReceiverConfiguration.ObjectLayout = .id, log: @escaping @Sendable (String) -> Void = { _ in }) throws(ReceiverError) {
        root = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        objectsDirectory = root + "/objects"
        uploadsDirectory = root + "/uploads"
        temporaryDirectory = root + "/tmp"
        filesDirectory = root + "/files"
        quarantineDirectory = root + "/quarantine"
        self.log = log
        self.layout = layout
        self.partialTTL = partialTTL
        self.bootID = bootID
        syncsEveryWrite = syncMode == .always || bootID == nil
        for path in [root, objectsDirectory, uploadsDirectory, temporaryDirectory] {
            try Syscalls.makeDirectory(path)
        }
        try Self.finishQuarantines(objects: objectsDirectory, quarantine: quarantineDirectory)
        for name in try Syscalls.listDirectory(temporaryDirectory) {
            try Syscalls.unlinkIfPresent(temporaryDirectory + "/" + name)
        }
        var keys: [String: String] = [:]
        var digests: [String: String] = [:]
        var bytes: Int64 = 0
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
            bytes += object.size
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
            bytes += object.size
        }
        index = Mutex(keys)
        digestIndex = Mutex(digests)
        storedBytes = Mutex(bytes)
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
    func recordPath(_ id: String) -> String { uploadsDirectory + "/" + id + ".json" }
    func objectPath(_ id: String) -> String { objectsDirectory + "/" + id }
    func sidecarPath(_ id: String) -> String { objectsDirectory + "/" + id + ".json" }

    // MARK: Files

    /// Writes `bytes` to `path` so that a reader sees the old or the new content, never a mix:
    /// a file in `tmp/` renamed over `path`. With `durable` the file is fsync'd before the rename
    /// and the directory after it, so the new content also survives a machine crash.
    func writeAtomically(_ bytes: [UInt8], to path: String, directory: String, durable: Bool) throws(ReceiverError) {
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

    static func encode(_ value: some Encodable) throws(ReceiverError) -> [UInt8] {
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
