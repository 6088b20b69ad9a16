import Foundation
import Receiver
import Testing
import UploadProtocol

/// `serve` never writes outside `--dir`, whatever the request: hostile upload and object ids
/// (`..`, absolute paths, encoded slashes and dots, NUL, ids of other lengths), hostile file names
/// and idempotency keys. The whole tree of the directory's parent is compared before and after.
@Suite struct ConfinementTests {
    /// Paths a request may name; each is tried with every method that can write.
    static let hostilePaths = [
        "/uploads/..", "/uploads/../escape", "/uploads/../../escape", "/uploads/%2e%2e", "/uploads/%2e%2e%2fescape",
        "/uploads/..%2fescape", "/uploads/%2F..%2F..%2Fescape", "/uploads//etc/passwd", "//uploads/../escape",
        "/uploads/%00", "/uploads/0123456789abcdef0123456789abcde", "/uploads/0123456789abcdef0123456789abcdef0",
        "/uploads/0123456789ABCDEF0123456789ABCDEF", "/uploads/0123456789abcdef0123456789abcdeg",
        "/uploads/" + String(repeating: "a", count: 200), "/objects/../uploads", "/objects/%2e%2e/escape",
        "/escape", "/../escape", "/uploads/./././.", "/uploads/\\..\\escape",
    ]

    /// A snapshot of every entry under `root`: relative path -> size and modification time.
    static func tree(_ root: String) -> [String: String] {
        var entries: [String: String] = [:]
        guard let walker = FileManager.default.enumerator(atPath: root) else { return entries }
        while let relative = walker.nextObject() as? String {
            let attributes = (try? FileManager.default.attributesOfItem(atPath: root + "/" + relative)) ?? [:]
            let size = (attributes[.size] as? Int) ?? -1
            let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            entries[relative] = "\(size) \(modified)"
        }
        return entries
    }

    @Test func hostileRequestsWriteNothingOutsideTheDirectory() throws {
        let parent = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        // A neighbour of the storage directory, which a `..` would reach.
        try FileManager.default.createDirectory(atPath: parent + "/neighbour", withIntermediateDirectories: true)
        try Data("untouched".utf8).write(to: URL(fileURLWithPath: parent + "/neighbour/file"))
        let receiver = try TestReceiver(directory: parent + "/store")
        defer { receiver.stop() }
        let before = Self.tree(parent).filter { !$0.key.hasPrefix("store") }

        let body = Array("hostile body".utf8)
        let resumable = ResumableUploadTests.patchHeaders(version: 6, offset: 0, complete: true)
        for path in Self.hostilePaths {
            for method in ["POST", "PUT", "PATCH", "DELETE", "HEAD", "GET"] {
                let client = try receiver.client()
                let headers = method == "PATCH" ? resumable : [("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?1")]
                // A refusal or a closed connection are both fine; a success is not.
                if let response = try? client.request(method, path, headers: headers,
                                                       body: method == "GET" || method == "HEAD" ? nil : body) {
                    #expect(response.status >= 400, "\(method) \(path) answered \(response.status)")
                }
            }
        }
        // Uploads that succeed, carrying hostile names and keys: stored inside, under the receiver's own ids.
        let hostileNames = ["../../escape.jpg", "/etc/passwd", "..\\..\\escape", "a/../../b", "%2e%2e%2fescape"]
        for (index, name) in hostileNames.enumerated() {
            let content = Array("photo \(index)".utf8)
            let response = try receiver.client().request("POST", "/uploads", headers: [
                ("Content-Disposition", ResumableUpload.contentDisposition(filename: name)),
                ("Idempotency-Key", "../../key-\(index)"),
                ("Repr-Digest", Digest.reprDigest(content)),
            ], body: content)
            #expect([200, 201, 400].contains(response.status), "upload named \(name) answered \(response.status)")
        }

        let after = Self.tree(parent)
        let outside = after.filter { !$0.key.hasPrefix("store") }
        #expect(outside == before, "entries outside --dir changed: \(Set(outside.keys).symmetricDifference(before.keys))")
        #expect(try String(contentsOfFile: parent + "/neighbour/file", encoding: .utf8) == "untouched")
        // Inside: only the receiver's own layout, objects named by its own 32-hex ids.
        for relative in after.keys where relative.hasPrefix("store/") {
            let parts = relative.split(separator: "/").map(String.init)
            #expect(["objects", "tmp", "uploads"].contains(parts[1]), "unexpected entry \(relative)")
            if parts.count == 3 {
                let id = parts[2].hasSuffix(".json") ? String(parts[2].dropLast(5)) : parts[2]
                #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "unexpected file \(relative)")
            }
            #expect(parts.count <= 3, "nested entry \(relative)")
        }
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
    }
}
