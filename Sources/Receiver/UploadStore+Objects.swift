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
}
