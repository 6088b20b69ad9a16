import Foundation
import Receiver
import Testing
import UploadProtocol

/// The receiver keeps each upload's provenance (`X-Photo-*`) in its sidecar and
/// lists it; `--layout path` stores objects by library path, never outside `files/`, never over
/// other content. A path or name that is not UTF-8 keeps its exact bytes (Linux names are bytes).
@Suite struct ProvenanceTests {
    static func provenanceHeaders(path: String, mtime: String = "2024-07-01T09:30:00.123456789Z", size: Int,
                                  taken: String? = "2024:07:01 11:29:58") -> [(String, String)] {
        var headers = [("X-Photo-Path", path), ("X-Photo-Mtime", mtime), ("X-Photo-Size", String(size))]
        if let taken { headers.append(("X-Photo-Taken", taken)) }
        return headers
    }

    /// Reads a sidecar from disk.
    static func sidecar(_ receiver: TestReceiver, id: String) throws -> StoredObject {
        let data = try Data(contentsOf: URL(fileURLWithPath: receiver.directory + "/objects/\(id).json"))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(StoredObject.self, from: data)
    }

    @Test func aPlainUploadKeepsItsProvenanceInTheSidecarAndTheListing() throws {
        let receiver = try TestReceiver { $0.token = "t0k" }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(3_000, seed: 11)
        let auth = [("Authorization", "Bearer t0k")]
        let stored = try receiver.client().request("PUT", "/uploads", headers: auth + Self.provenanceHeaders(
            path: "2024/Holiday/beach%20day.jpg", size: 3_000, taken: "2024:07:01%2011:29:58"), body: body)
        #expect(stored.status == 201)
        let id = try #require(stored["x-server-resource-id"])

        let sidecar = try Self.sidecar(receiver, id: id)
        let provenance = try #require(sidecar.provenance)
        #expect(provenance.path == "2024/Holiday/beach day.jpg")
        #expect(provenance.pathEncoded == "2024/Holiday/beach%20day.jpg")
        #expect(provenance.mtime == "2024-07-01T09:30:00.123456789Z")
        #expect(provenance.mtimeNanoseconds == 1_719_826_200_123_456_789)
        #expect(provenance.size == 3_000)
        #expect(provenance.dateTimeOriginal == "2024:07:01 11:29:58")
        #expect(sidecar.storedPath == nil)

        // The listing is token-checked like every other route, and carries the same provenance.
        #expect(try receiver.client().request("GET", "/objects").status == 401)
        let listing = try receiver.objects()
        #expect(listing.map(\.id) == [id])
        #expect(listing.first?.provenance == provenance)
        let text = try receiver.client().request("GET", "/objects", headers: auth).text
        #expect(text.contains("\"dateTimeOriginal\":\"2024:07:01 11:29:58\""))
        // The default layout is unchanged: the bytes are objects/<id>, there is no files/.
        #expect(receiver.files(in: "objects").contains(id))
        #expect(!FileManager.default.fileExists(atPath: receiver.directory + "/files"))
    }

    /// A resumable upload keeps what its creation carried; provenance first sent on the completing
    /// append is kept too (the verdict's rule).
    @Test(arguments: [true, false])
    func aResumableUploadKeepsProvenanceFromEitherRequest(onCreation: Bool) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(20_000, seed: 12)
        let headers = Self.provenanceHeaders(path: "a/b.jpg", size: 20_000, taken: nil)
        let path = try receiver.createPartialUpload(body[..<5_000], version: 6, extra: onCreation ? headers : [])
        let rest = try receiver.client().request("PATCH", path,
                                                 headers: ResumableUploadTests.patchHeaders(version: 6, offset: 5_000, complete: true)
                                                     + (onCreation ? [] : headers),
                                                 body: Array(body[5_000...]))
        #expect(rest.status == 201)
        let id = try #require(rest["x-server-resource-id"])
        let provenance = try #require(try Self.sidecar(receiver, id: id).provenance)
        #expect(provenance.path == "a/b.jpg")
        #expect(provenance.size == 20_000)
        #expect(provenance.dateTimeOriginal == nil)
        #expect(try receiver.content(of: id) == body)
    }

    @Test(arguments: [
        [("X-Photo-Path", "a%zz.jpg"), ("X-Photo-Mtime", "2024-07-01T09:30:00Z"), ("X-Photo-Size", "1")],
        [("X-Photo-Path", "a%00.jpg"), ("X-Photo-Mtime", "2024-07-01T09:30:00Z"), ("X-Photo-Size", "1")],
        [("X-Photo-Path", "a.jpg"), ("X-Photo-Size", "1")],
        [("X-Photo-Path", "a.jpg"), ("X-Photo-Mtime", "2024-07-01 09:30:00"), ("X-Photo-Size", "1")],
        [("X-Photo-Path", "a.jpg"), ("X-Photo-Mtime", "2024-07-01T09:30:00Z"), ("X-Photo-Size", "-4")],
        [("X-Photo-Path", "a.jpg"), ("X-Photo-Mtime", "2024-07-01T09:30:00Z"), ("X-Photo-Size", "1"), ("X-Photo-Taken", "%E9")],
    ])
    func malformedProvenanceIsRefusedAndNothingIsStored(headers: [(String, String)]) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let answer = try receiver.client().request("PUT", "/uploads", headers: headers, body: [1, 2, 3])
        #expect(answer.status == 400)
        #expect(try receiver.objects().isEmpty)
    }

    /// Every file and folder under `root`, relative, sorted (names that are not UTF-8 escaped).
    static func tree(_ root: String) -> [String] {
        var found: [String] = []
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
        while let next = enumerator.nextObject() as? String { found.append(next) }
        return found.sorted()
    }

    @Test func pathLayoutStoresObjectsByLibraryPathAndServesThem() throws {
        let receiver = try TestReceiver { $0.layout = .path }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(4_000, seed: 13)
        let stored = try receiver.client().request("PUT", "/uploads", headers: Self.provenanceHeaders(path: "2024/07/IMG_0001.JPG", size: 4_000),
                                                   body: body)
        #expect(stored.status == 201)
        let id = try #require(stored["x-server-resource-id"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: receiver.directory + "/files/2024/07/IMG_0001.JPG")) == Data(body))
        #expect(!receiver.files(in: "objects").contains(id))
        #expect(try Self.sidecar(receiver, id: id).storedPath == "files/2024/07/IMG_0001.JPG")
        #expect(try receiver.content(of: id) == body)
        // An upload without a path goes where it always did.
        let plain = try receiver.client().request("PUT", "/uploads", body: [9, 9, 9])
        let plainID = try #require(plain["x-server-resource-id"])
        #expect(receiver.files(in: "objects").contains(plainID))
        // The digest lookup finds an object stored by path, and a restart still serves it.
        let hex = Digest.hex(Digest.sha256(body))
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)")["x-server-resource-id"] == id)
        receiver.stop()
        let again = try TestReceiver(directory: receiver.directory) { $0.layout = .path }
        defer { again.stop() }
        #expect(try again.content(of: id) == body)
        #expect(try again.client().request("HEAD", "/objects/by-digest/\(hex)")["x-server-resource-id"] == id)
    }

    /// Hostile paths never reach outside `files/`: `..` is stored as `__`, a leading `/`
    /// is dropped, `.` and empty components vanish. A neighbour of the receiver's directory is
    /// compared before and after.
    @Test(arguments: [
        ("../../escape.jpg", "files/__/__/escape.jpg"),
        ("/etc/passwd", "files/etc/passwd"),
        ("a/../../b.jpg", "files/a/__/__/b.jpg"),
        ("./././c.jpg", "files/c.jpg"),
        ("%2F%2E%2E%2Fd.jpg", "files/__/d.jpg"),
        ("x//y/.//z.jpg", "files/x/y/z.jpg"),
        ("..", "files/__"),
    ])
    func pathLayoutNeverLeavesItsFolder(path: String, expected: String) throws {
        let parent = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        try Data("neighbour".utf8).write(to: URL(fileURLWithPath: parent + "/neighbour.txt"))
        let receiver = try TestReceiver(directory: parent + "/store") { $0.layout = .path }
        defer { receiver.stop() }
        let before = Self.tree(parent).filter { !$0.hasPrefix("store") }
        let body = TestReceiver.bytes(500, seed: 14)
        let stored = try receiver.client().request("PUT", "/uploads", headers: Self.provenanceHeaders(path: path, size: 500), body: body)
        #expect(stored.status == 201)
        let id = try #require(stored["x-server-resource-id"])
        #expect(Self.tree(parent).filter { !$0.hasPrefix("store") } == before)
        let sidecar = try Self.sidecar(receiver, id: id)
        #expect(sidecar.storedPath == expected)
        let onDisk = receiver.directory + "/" + (Provenance.percentDecode(expected).map { String(decoding: $0, as: UTF8.self) } ?? "")
        #expect(try Data(contentsOf: URL(fileURLWithPath: onDisk)) == Data(body))
        #expect(try receiver.content(of: id) == body)
    }

    /// A path `--layout path` cannot make (a name too long for a file name, a
    /// path too deep, only `.`) is stored at `objects/<id>` and says so in its sidecar and the log.
    @Test(arguments: [(String(repeating: "n", count: 230) + ".jpg", "too long"),
                      (Array(repeating: "d", count: 70).joined(separator: "/") + "/deep.jpg", "folders deep"),
                      (".", "names no file")])
    func aPathTheLayoutCannotMakeIsStoredByIDAndSaysSo(path: String, reason: String) throws {
        let receiver = try TestReceiver { $0.layout = .path }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(500, seed: 19)
        let stored = try receiver.client().request("PUT", "/uploads", headers: Self.provenanceHeaders(path: path, size: 500), body: body)
        #expect(stored.status == 201)
        let id = try #require(stored["x-server-resource-id"])
        let sidecar = try Self.sidecar(receiver, id: id)
        #expect(sidecar.storedPath == nil)
        #expect(sidecar.layoutNote?.contains("stored as objects/\(id)") == true, "\(sidecar.layoutNote ?? "no note")")
        #expect(sidecar.layoutNote?.contains(reason) == true, "\(sidecar.layoutNote ?? "no note")")
        #expect(try receiver.content(of: id) == body)
        receiver.stop()
        #expect(receiver.log.lines.contains { $0.contains("layout-fallback") }, "\(receiver.log.lines)")
    }

    /// Two different contents at the same library path both survive; the same content with the
    /// same key is one object.
    @Test func pathLayoutKeepsBothContentsAtOnePath() throws {
        let receiver = try TestReceiver { $0.layout = .path }
        defer { receiver.stop(); receiver.removeDirectory() }
        let first = TestReceiver.bytes(1_000, seed: 15), second = TestReceiver.bytes(1_000, seed: 16)
        func put(_ body: [UInt8], key: String? = nil) throws -> RawHTTPClient.Response {
            let keyHeader = [("Idempotency-Key", key ?? Digest.hex(Digest.sha256(body)))]
            return try receiver.client().request("PUT", "/uploads", headers: keyHeader + Self.provenanceHeaders(path: "dup/photo.jpg", size: 1_000),
                                                 body: body)
        }
        let a = try put(first), b = try put(second), again = try put(first)
        #expect(a.status == 201 && b.status == 201)
        #expect(again.status == 200)
        #expect(again["x-server-resource-id"] == a["x-server-resource-id"])
        let idA = try #require(a["x-server-resource-id"]), idB = try #require(b["x-server-resource-id"])
        let suffixed = "photo~\(Digest.hex(Digest.sha256(second)).prefix(12)).jpg"
        #expect(receiver.files(in: "files/dup") == ["photo.jpg", suffixed])
        #expect(try receiver.content(of: idA) == first)
        #expect(try receiver.content(of: idB) == second)
        #expect(try Self.sidecar(receiver, id: idB).storedPath == "files/dup/\(suffixed)")
        // The same content under another key is a new object, beside both: its digest's suffix
        // is still free; a fourth with yet another key takes the id.
        let third = try put(first, key: "other-key")
        let idC = try #require(third["x-server-resource-id"])
        #expect(idC != idA)
        #expect(receiver.files(in: "files/dup").contains("photo~\(Digest.hex(Digest.sha256(first)).prefix(12)).jpg"))
        #expect(try receiver.content(of: idC) == first)
        let fourth = try put(first, key: "third-key")
        let idD = try #require(fourth["x-server-resource-id"])
        #expect(receiver.files(in: "files/dup").contains("photo~\(idD).jpg"))
        #expect(try receiver.content(of: idD) == first)
    }

    /// A file name that is not UTF-8 keeps its exact bytes: in the provenance, in the sidecar's
    /// `filenameEncoded`, and as the stored file's name under `--layout path`.
    @Test func bytesThatAreNotUTF8AreKeptExactly() throws {
        let receiver = try TestReceiver { $0.layout = .path }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(800, seed: 17)
        let stored = try receiver.client().request("PUT", "/uploads", headers: Self.provenanceHeaders(path: "caf%E9/caf%E9.jpg", size: 800)
                                                   + [("Content-Disposition", ResumableUpload.contentDisposition(filename: Array("caf\u{E9}".utf8.prefix(3)) + [0xE9] + Array(".jpg".utf8)))],
                                                   body: body)
        #expect(stored.status == 201)
        let id = try #require(stored["x-server-resource-id"])
        let sidecar = try Self.sidecar(receiver, id: id)
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)
        #expect(sidecar.provenance?.pathBytes == Array("caf".utf8) + [0xE9, 0x2F] + name)
        #expect(sidecar.provenance?.path == "caf\u{FFFD}/caf\u{FFFD}.jpg")
        #expect(sidecar.filenameEncoded == "caf%E9.jpg")
        #expect(sidecar.filename == "caf\u{FFFD}.jpg")
        // The stored file's name is those bytes, byte for byte.
        let full = Array((receiver.directory + "/files/caf").utf8) + [0xE9, 0x2F] + name + [0]
        let fd = full.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_RDONLY) } }
        #expect(fd >= 0)
        if fd >= 0 { close(fd) }
        #expect(try receiver.content(of: id) == body)
    }
}
