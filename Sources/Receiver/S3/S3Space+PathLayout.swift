import Foundation
import SystemSupport
import UploadProtocol

/// `serve --store s3://… --layout path`: an object's bytes under `files/<library path>` in the
/// account's space, as a directory store keeps them, so the bucket reads as the libraries'
/// folders. A name is never replaced: the first object claims it, a later one with another content
/// takes `~<12 hex of its SHA-256>` before the extension, then `~<id>`.
///
/// Names are claimed as the dedupe index is, with no lock server: `names/<h>.json` (h: SHA-256 of
/// the key) names the object that owns a key, created with `If-None-Match: *`, so two instances
/// placing two photos at one path cannot both win. The bytes are copied there inside the bucket
/// (CopyObject) from `objects/<id>` once the object is complete, before its sidecar (which names
/// the key in `storedPath`) is written; the `objects/<id>` copy goes after. A claim whose object
/// never got its sidecar (an instance killed in between) is taken over once it is `staleClaim`
/// old; a CopyObject of more than 5 GiB, which S3 refuses, leaves the object under its id, said in
/// its sidecar's `layoutNote`, as a path that cannot be a key does.
extension S3Space {
    /// A name claim older than this whose object has no sidecar is taken over.
    static let staleClaim: TimeInterval = 3600

    /// A name's owner.
    struct NameClaim: Codable, Sendable {
        var objectID: String
        var claimedAt: Date
    }

    /// The key, within the space, that holds an object's bytes: its `storedPath`, else `objects/<id>`.
    static func bytesKey(of object: StoredObject) -> String {
        if let stored = object.storedPath, let bytes = Provenance.percentDecode(stored), !bytes.isEmpty,
           let key = String(validating: bytes, as: UTF8.self) {
            return key
        }
        return objectKey(object.id)
    }

    /// The keys `--layout path` tries for `libraryPath`, in order, or why it cannot have one.
    static func pathCandidates(_ libraryPath: [UInt8], sha256Hex: String, id: String) -> Result<[String], LayoutProblem> {
        var components: [String] = []
        for part in libraryPath.split(separator: 0x2F, omittingEmptySubsequences: true) {
            if part.elementsEqual([0x2E]) { continue }                                   // "."
            if part.contains(0) { return .failure(LayoutProblem("the library path holds a NUL byte")) }
            guard let text = String(validating: Array(part), as: UTF8.self) else {
                return .failure(LayoutProblem("the library path is not UTF-8, which an S3 key must be"))
            }
            components.append(text == ".." ? "__" : text)                               // ".." never climbs
        }
        guard let leaf = components.popLast() else { return .failure(LayoutProblem("the library path names no file")) }
        guard components.count < 64 else {
            return .failure(LayoutProblem("the library path is \(components.count + 1) folders deep (at most 64)"))
        }
        let folder = (["files"] + components).joined(separator: "/")
        let stem: Substring, ext: Substring
        if let dot = leaf.lastIndex(of: "."), dot > leaf.startIndex {
            (stem, ext) = (leaf[..<dot], leaf[dot...])
        } else {
            (stem, ext) = (leaf[...], "")
        }
        let keys = [leaf, "\(stem)~\(sha256Hex.prefix(12))\(ext)", "\(stem)~\(id)\(ext)"].map { "\(folder)/\($0)" }
        // S3 keys are at most 1,024 bytes, the store's prefix and the account's folder included.
        guard keys.allSatisfy({ $0.utf8.count <= 900 }) else {
            return .failure(LayoutProblem("the library path is too long for an S3 key (over 900 bytes)"))
        }
        return .success(keys)
    }

    /// Why an object stays under its id.
    struct LayoutProblem: Error, Sendable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// Places the bytes at `objectKey` (the object's own, `objects/<id>`) under `files/` for
    /// `object`, recording where in its `storedPath`, or why not in its `layoutNote`. Returns the
    /// key placed at, or nil. Throws the bucket's failures.
    func placeByPath(_ object: inout StoredObject, from objectKey: String, libraryPath: [UInt8]?, now: Date) throws(ReceiverError) -> String? {
        func note(_ reason: String) -> String? {
            object.layoutNote = "stored as objects/\(object.id): \(reason)"
            return nil
        }
        guard let libraryPath else { return note("the upload named no library path (X-Photo-Path)") }
        let candidates: [String]
        switch Self.pathCandidates(libraryPath, sha256Hex: object.sha256, id: object.id) {
        case .success(let keys): candidates = keys
        case .failure(let problem): return note(problem.reason)
        }
        if object.size > 5 << 30 { return note("over 5 GiB, more than one S3 CopyObject moves") }
        for candidate in candidates {
            guard try claimName(candidate, for: object.id, now: now) else { continue }
            try bucket.copy(objectKey, to: key(candidate))
            object.storedPath = Provenance.percentEncode(Array(candidate.utf8))
            return candidate
        }
        return note("every name for its library path is taken")
    }

    /// Gives up `placed` (an object that lost to a duplicate after it was placed): its bytes and
    /// its name, if the name still names it.
    func releaseName(_ placed: String, of objectID: String) {
        let nameKey = key(Self.nameKey(placed))
        guard let entry = try? bucket.get(nameKey), let claim = try? Self.decode(NameClaim.self, from: entry.bytes),
              claim.objectID == objectID else { return }
        try? bucket.delete(key(placed))
        _ = try? bucket.delete(nameKey, ifMatch: entry.etag)
    }

    static func nameKey(_ placed: String) -> String {
        "names/" + Hex.string((try? SHA256.digest(Array(placed.utf8))) ?? []) + ".json"
    }

    /// Makes `placed`'s name claim name `objectID` unless another object holds it: one with a
    /// sidecar, or one claimed less than `staleClaim` ago (still being completed). True when
    /// `objectID` owns the name.
    private func claimName(_ placed: String, for objectID: String, now: Date) throws(ReceiverError) -> Bool {
        let nameKey = key(Self.nameKey(placed))
        let claim = try UploadStore.encode(NameClaim(objectID: objectID, claimedAt: now))
        for _ in 0..<4 {
            if case .written = try bucket.put(nameKey, claim, condition: .absent) { return true }
            guard let entry = try bucket.get(nameKey) else { continue }
            guard let held = try? Self.decode(NameClaim.self, from: entry.bytes) else { return false }
            if held.objectID == objectID { return true }
            if try object(held.objectID) != nil || now.timeIntervalSince(held.claimedAt) < Self.staleClaim { return false }
            if case .written = try bucket.put(nameKey, claim, condition: .matches(entry.etag)) { return true }
        }
        return false
    }
}
