import Foundation
import SystemSupport

/// What the receiver holds, checked against the library: counted from the `/objects` listing and
/// the sidecars on disk, with each object's bytes hashed again.
struct Audit {
    /// Photos whose current content is not on the receiver.
    var lost = 0
    /// Objects beyond the first with the same content.
    var duplicates = 0
    /// Objects whose bytes do not hash to their sidecar's SHA-256, whose idempotency key names other
    /// content, or whose content was never any version of any photo (a mismatched object).
    var corrupted = 0
    /// Objects in the listing.
    var listed = 0
    /// Problems worth a line in the notes (listing and sidecars disagree, and so on).
    var notes: [String] = []

    /// Audits `receiverDirectory` (and the listing at `objectsURL`, when given) against `library`.
    /// `expectAll`: every current photo must be there (false while a fault is still in force).
    static func check(library: Library, receiverDirectory: String, objectsURL: String?, token: String? = nil,
                      expectAll: Bool = true) -> Audit {
        var audit = Audit()
        let objectsDirectory = receiverDirectory + "/objects"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: objectsDirectory)) ?? []
        var shas: [String] = []
        var sidecarIDs: Set<String> = []
        for name in names where name.hasSuffix(".json") {
            let id = String(name.dropLast(5))
            sidecarIDs.insert(id)
            guard let data = FileManager.default.contents(atPath: objectsDirectory + "/" + name),
                  let sidecar = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
                  let recorded = sidecar["sha256"] as? String else {
                audit.corrupted += 1
                audit.notes.append("unreadable sidecar \(name)")
                continue
            }
            let actual = try? SHA256.hex(path: objectsDirectory + "/" + id)
            if actual != recorded {
                audit.corrupted += 1
                audit.notes.append("object \(id): bytes hash to \(actual ?? "unreadable"), sidecar says \(recorded)")
            } else if let key = sidecar["idempotencyKey"] as? String, key.lowercased() != recorded {
                audit.corrupted += 1
                audit.notes.append("object \(id): idempotency key \(key) but content \(recorded)")
            } else if !library.everWritten.contains(recorded) {
                audit.corrupted += 1
                audit.notes.append("object \(id): content \(recorded) was never a photo's content")
            }
            shas.append(recorded)
        }
        audit.listed = sidecarIDs.count
        audit.duplicates = shas.count - Set(shas).count
        if expectAll {
            let present = Set(shas)
            audit.lost = library.current.values.filter { !present.contains($0) }.count
        }
        if let objectsURL {
            switch Listing.ids(objectsURL, token: token) {
            case .success(let ids):
                audit.listed = ids.count
                if Set(ids) != sidecarIDs {
                    audit.corrupted += Set(ids).symmetricDifference(sidecarIDs).count
                    audit.notes.append("GET /objects lists \(ids.count) objects, \(sidecarIDs.count) sidecars on disk")
                }
            case .failure(let error):
                audit.notes.append("GET /objects failed: \(error)")
            }
        }
        return audit
    }
}

/// `GET /objects` through curl (the tests do the same; FoundationNetworking is heavy).
enum Listing {
    /// The ids `GET /objects` lists, asked with `token` (a read token) when given.
    static func ids(_ url: String, token: String? = nil) -> Result<[String], MatrixError> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sf", "--max-time", "10"] + (token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + [url]
        let out = Pipe()
        process.standardOutput = out
        do { try process.run() } catch { return .failure(MatrixError("curl: \(error)")) }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let list = (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] else {
            return .failure(MatrixError("curl exit \(process.terminationStatus)"))
        }
        return .success(list.compactMap { $0["id"] as? String })
    }
}
