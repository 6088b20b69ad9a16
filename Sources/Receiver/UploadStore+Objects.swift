#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SystemSupport
import UploadProtocol

/// `objects/` (and `files/` under `--layout path`): staged bytes turned into an object, deduplicated
/// by key and content, and the objects read back for listings, digest lookups and proof.
extension UploadStore {
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
        // The object this would duplicate is checked before the index is locked: hashing a large
        // file again (its stamp changed) must not hold up every other upload's completion. A
        // corrupt one is moved aside here, so the lookup below no longer finds it.
        if let entry, let existing = index.withLock({ $0[entry] }), let object = object(existing), object.sha256 == digestHex {
            _ = verified(object)
        }
        return try index.withLock { keys throws(ReceiverError) -> Completion in
            if let entry, let existing = keys[entry],
               let object = try? Self.decode(StoredObject.self, at: sidecarPath(existing)), object.sha256 == digestHex {
                // A duplicate only while the first copy's file is the one that was hashed (the
                // check above leaves this one cheap unless the file changed again meanwhile). A
                // copy whose file was lost is stored again, and its stale sidecar goes; a corrupt
                // one is moved aside, and one that cannot be read now is left for a later check:
                // either way this upload's bytes are stored afresh, for the client must never be
                // told its photo is held when it is not.
                switch checkContent(of: object, rehash: false) {
                case .intact(let checked):
                    if checked.contentStamp != object.contentStamp { writeStamp(of: checked) }
                    try Syscalls.unlinkIfPresent(stagedPath)
                    return .deduplicated(checked)
                case .missing:
                    try Syscalls.unlinkIfPresent(sidecarPath(existing))
                    keys[entry] = nil
                    digestIndex.withLock { digests in
                        if digests[digestHex] == existing { digests[digestHex] = nil }
                    }
                case .corrupt(let reason):
                    do throws(ReceiverError) {
                        try moveAside(object, reason: reason, keys: &keys)
                    } catch {
                        logUnmovable(object, reason: reason, error)
                        keys[entry] = nil
                    }
                case .unchecked:
                    break
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
            object.device = metadata.device
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
                // The stamp of the file as placed (a rename or link changes its change time), so
                // later answers can tell it is still the file whose bytes were just hashed.
                object.contentStamp = try placedStamp(object)
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
            storedBytes.withLock { $0 += size }
            return .stored(object)
        }
    }

    /// Why `--layout path` cannot place a library path, in words.
    static func pathLayoutProblem(_ libraryPath: [UInt8]) -> String {
        let components = libraryPath.split(separator: 0x2F, omittingEmptySubsequences: true).filter { $0.elementsEqual([0x2E]) == false }
        if components.isEmpty { return "the library path names no file" }
        if components.count > 64 { return "the library path is \(components.count) folders deep (at most 64)" }
        if components.contains(where: { $0.contains(0) }) { return "the library path holds a NUL byte" }
        if components.contains(where: { $0.count + 1 + 64 > 255 }) { return "a name in the library path is too long for a file name (over 190 bytes)" }
        return "the library path cannot be made under files/"
    }

    /// Moves staged bytes to `files/<library path>` (`ObjectLayout.path`) and returns where they
    /// went, relative to the root; nil (nothing moved) when the path cannot be made, and the
    /// object goes to `objects/<id>`. The name is never replaced: a link that finds the name taken
    /// tries `~<12 hex of the SHA-256>`, then `~<id>`, before the extension. Throws for other
    /// file-system failures.
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

    /// The `ContentStamp` of a newly placed object's file.
    private func placedStamp(_ object: StoredObject) throws(ReceiverError) -> ContentStamp {
        try translatingSystemErrors(ReceiverError.init) { () throws(SystemError) in
            ContentStamp(try ReadOnlyFile(pathBytes: contentPath(of: object)).stamp())
        }
    }

    /// Every stored object's sidecar, oldest first, as on disk (nothing checked).
    func sidecars() throws(ReceiverError) -> [StoredObject] {
        var found: [StoredObject] = []
        for name in try Syscalls.listDirectory(objectsDirectory) where name.hasSuffix(".json") {
            let id = String(name.dropLast(5))
            if Self.isValidID(id), let object = try? Self.decode(StoredObject.self, at: sidecarPath(id)) {
                found.append(object)
            }
        }
        return found.sorted { ($0.storedAt, $0.id) < ($1.storedAt, $1.id) }
    }

    /// Every stored object, oldest first (`GET /objects`). Each file's stamp is checked (and its
    /// bytes hashed again when it changed), so a corrupt object is moved aside and left out; an
    /// object whose file is missing or cannot be read now is still listed, as it is on record.
    func objects() throws(ReceiverError) -> [StoredObject] {
        try sidecars().compactMap { object in
            switch checkContent(of: object, rehash: false) {
            case .intact(let checked):
                if checked.contentStamp != object.contentStamp { recordStamp(of: checked) }
                return checked
            case .missing, .unchecked:
                return object
            case .corrupt(let reason):
                quarantineLogged(object, reason: reason)
                return nil
            }
        }
    }

    /// A stored object whose content has the SHA-256 `sha256Hex` (64 lowercase hex digits), or
    /// nil. Its file must still be the one that was hashed (`verified`), so an object removed from
    /// disk, cut short or changed is not reported: clients take this answer as proof that the
    /// receiver holds the bytes (`photodrain verify`, the hash pre-check).
    func object(sha256Hex: String) -> StoredObject? {
        // A corrupt first object is moved aside and the index falls to another with that content.
        for _ in 0..<4 {
            guard let id = digestIndex.withLock({ $0[sha256Hex] }), let object = object(id), object.sha256 == sha256Hex else { return nil }
            if let checked = verified(object) { return checked }
            if digestIndex.withLock({ $0[sha256Hex] }) == id { return nil }
        }
        return nil
    }

    /// One stored object's sidecar as on disk, or nil (nothing checked: for bookkeeping, never
    /// for an answer that says the receiver holds the object).
    func object(_ id: String) -> StoredObject? {
        guard Self.isValidID(id) else { return nil }
        return try? Self.decode(StoredObject.self, at: sidecarPath(id))
    }

    /// One stored object whose file is still the one that was hashed (`verified`), or nil: what
    /// `GET /objects/<id>`, its content and an upload's `Repr-Digest` answer from.
    func verifiedObject(_ id: String) -> StoredObject? {
        object(id).flatMap(verified)
    }
}
