#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SystemSupport
import UploadProtocol

/// Whether a stored object's file is still the one the receiver hashed. A client takes the
/// receiver's answers (the digest lookup, a duplicate at creation, the sidecar, the content) as
/// proof that it holds those exact bytes, so a size check is not enough: one byte flipped on
/// disk, the size kept, made every later upload of that photo a "duplicate" of the corrupt copy.
///
/// Each object's sidecar keeps the `ContentStamp` (device, inode, size, modification and change
/// times) of its file as it was when hashed. An object answers only after its file's stamp is
/// compared with it: equal, it answers at once; different (a rewrite in place changes the change
/// time even when it restores the modification time), its bytes are hashed again first, and it
/// answers, with the new stamp recorded, only when they still hash to its digest. A corrupt
/// object is moved to `quarantine/` with its sidecar: it answers for nothing from then on, and the
/// next upload of those bytes stores them again. What changes no stamp (bit rot under the file
/// system) is found by the background scrub (`ObjectScrubber`), which hashes every object again.
extension UploadStore {
    /// What checking an object's file found.
    enum ContentCheck: Sendable {
        /// The file holds the object's bytes: the object as it should be recorded now (its
        /// `contentStamp` updated when the file was hashed again and did not change meanwhile).
        case intact(StoredObject)
        /// There is no file at the object's path.
        case missing
        /// The file is not the object's bytes: why, in words.
        case corrupt(reason: String)
        /// The file could not be checked now (it could not be opened or read, or the check was
        /// stopped): the object must not answer, and is kept.
        case unchecked(ReceiverError)
    }

    /// The piece hashed between two calls of a `check` pacing callback.
    static let checkSlice: Int64 = 1 << 20

    /// Checks `object`'s file: its stamp against the recorded one, and its bytes against its
    /// digest when the stamps differ or `rehash` is set. `pace` is called after each `checkSlice`
    /// bytes hashed with their count; false stops the check (`unchecked`).
    func checkContent(of object: StoredObject, rehash: Bool, pace: (Int64) -> Bool = { _ in true }) -> ContentCheck {
        let path = contentPath(of: object)
        let file: ReadOnlyFile
        let before: ContentStamp
        do throws(SystemError) {
            file = try ReadOnlyFile(pathBytes: path)
            before = ContentStamp(try file.stamp())
        } catch {
            if !Syscalls.exists(bytes: path) { return .missing }
            return .unchecked(ReceiverError(error))
        }
        if before.size != object.size {
            return .corrupt(reason: "its file is \(before.size) bytes, not \(object.size)")
        }
        if !rehash && object.contentStamp == before { return .intact(object) }
        let digest: [UInt8]
        do throws(SystemError) {
            let hasher = try SHA256()
            var offset: Int64 = 0
            while offset < object.size {
                let length = min(Self.checkSlice, object.size - offset)
                try hasher.update(from: file, offset: offset, length: length)
                offset += length
                if !pace(length) {
                    return .unchecked(ReceiverError(code: .io, message: "the check of object \(object.id) was stopped"))
                }
            }
            digest = try hasher.finish()
        } catch {
            if error.code == .truncated { return .corrupt(reason: "its file ended before its \(object.size) bytes") }
            return .unchecked(ReceiverError(error))
        }
        let hex = Hex.string(digest)
        guard hex == object.sha256 else { return .corrupt(reason: "its bytes hash to \(hex)") }
        var checked = object
        // A file that changed while it was hashed is hashed again next time.
        if let after = try? file.stamp(), ContentStamp(after) == before { checked.contentStamp = before }
        return .intact(checked)
    }

    /// `object` when its file still holds its bytes (hashed again first when its stamp changed,
    /// and the new stamp recorded), else nil; a corrupt object is moved to `quarantine/` on the way.
    /// Every answer that tells a client the receiver holds an object goes through here.
    func verified(_ object: StoredObject) -> StoredObject? {
        switch checkContent(of: object, rehash: false) {
        case .intact(let checked):
            if checked.contentStamp != object.contentStamp { recordStamp(of: checked) }
            return checked
        case .missing, .unchecked:
            return nil
        case .corrupt(let reason):
            quarantineLogged(object, reason: reason)
            return nil
        }
    }

    /// Writes `object`'s sidecar with its new `contentStamp`, unless the object has been moved
    /// aside meanwhile (a sidecar written then would stand in `objects/` without its bytes).
    func recordStamp(of object: StoredObject) {
        index.withLock { _ in writeStamp(of: object) }
    }

    /// `recordStamp` for a caller that holds `index`'s lock. Not fsync'd: a stamp lost in a
    /// crash costs one more hash, nothing else; a failure is ignored for the same reason.
    func writeStamp(of object: StoredObject) {
        guard Syscalls.exists(sidecarPath(object.id)) else { return }
        try? writeAtomically(try Self.encode(object), to: sidecarPath(object.id), directory: objectsDirectory, durable: false)
    }

    /// `quarantine(_:reason:)`, logging a failure to move the object (it answers nothing either way).
    /// Returns where it went, or nil when it had gone already or could not be moved.
    @discardableResult
    func quarantineLogged(_ object: StoredObject, reason: String) -> String? {
        do throws(ReceiverError) {
            return try quarantine(object, reason: reason)
        } catch {
            logUnmovable(object, reason: reason, error)
            return nil
        }
    }

    func logUnmovable(_ object: StoredObject, reason: String, _ error: ReceiverError) {
        log("object \(object.id) (sha256 \(object.sha256)) is corrupt (\(reason)) but could not be moved to quarantine/: \(error); it answers for nothing")
    }

    /// Moves a corrupt object aside: its bytes to `quarantine/<id>` and its sidecar, with a
    /// `Quarantine` note, to `quarantine/<id>.json`. From then on no lookup, dedupe or listing
    /// finds it, and the next upload of its bytes stores them again. Logs one line with the id,
    /// the digest, why and where it went. Returns where it went (relative to the root), or nil
    /// when another thread moved it first.
    func quarantine(_ object: StoredObject, reason: String) throws(ReceiverError) -> String? {
        try index.withLock { keys throws(ReceiverError) -> String? in try moveAside(object, reason: reason, keys: &keys) }
    }

    /// `quarantine` for a caller that holds `index`'s lock (`keys` is its value). The bytes go
    /// first: a crash in between leaves a sidecar whose bytes are in `quarantine/`, which the next
    /// start moves after them (`finishQuarantines`).
    @discardableResult
    func moveAside(_ object: StoredObject, reason: String, keys: inout [String: String]) throws(ReceiverError) -> String? {
        guard Syscalls.exists(sidecarPath(object.id)) else { return nil }
        for (entry, id) in keys where id == object.id { keys[entry] = nil }
        let suffix = "\n" + object.sha256
        let replacement = keys.first { $0.key.hasSuffix(suffix) }?.value
        digestIndex.withLock { digests in
            if digests[object.sha256] == object.id { digests[object.sha256] = replacement }
        }
        try Syscalls.makeDirectory(quarantineDirectory)
        var name = object.id
        if Syscalls.exists(quarantineDirectory + "/" + name) || Syscalls.exists(quarantineDirectory + "/" + name + ".json") {
            name += "-" + Self.newID().prefix(8)
        }
        let content = contentPath(of: object)
        if Syscalls.exists(bytes: content) { try Syscalls.rename(bytes: content, quarantineDirectory + "/" + name) }
        try Syscalls.rename(sidecarPath(object.id), quarantineDirectory + "/" + name + ".json")
        try Syscalls.fsyncDirectory(objectsDirectory)
        var note = object
        note.quarantine = Quarantine(at: Date(), reason: reason, from: object.storedPath ?? "objects/" + object.id)
        try? writeAtomically(try Self.encode(note), to: quarantineDirectory + "/" + name + ".json", directory: quarantineDirectory, durable: true)
        log("object \(object.id) (sha256 \(object.sha256), \(object.size) bytes) is corrupt: \(reason); "
            + "moved with its sidecar to quarantine/\(name); it answers for nothing now, and the next upload of those bytes stores them again")
        return "quarantine/" + name
    }

    /// At start: a quarantine cut short by a crash (its bytes in `quarantine/`, its sidecar still
    /// in `objects/`) is finished, so the sidecar does not list an object whose bytes are gone.
    static func finishQuarantines(objects: String, quarantine: String) throws(ReceiverError) {
        guard Syscalls.exists(quarantine) else { return }
        let names = Set(try Syscalls.listDirectory(quarantine))
        for name in names where !name.hasSuffix(".json") && !names.contains(name + ".json") {
            let id = String(name.prefix(32))
            guard isValidID(id), Syscalls.exists(objects + "/" + id + ".json"), !Syscalls.exists(objects + "/" + id) else { continue }
            try Syscalls.rename(objects + "/" + id + ".json", quarantine + "/" + name + ".json")
        }
    }
}
