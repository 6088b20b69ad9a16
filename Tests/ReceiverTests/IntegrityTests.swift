import Foundation
import Receiver
import SystemSupport
import Testing
import UploadProtocol

/// `serve` answers for an object only while its file is the one it hashed (issue 31 item 5):
/// one byte flipped in a stored object, the size kept, used to leave the digest lookup, the
/// dedupe at creation and the listing saying "I have it", so the corrupt copy stood in for every
/// later upload of that photo.
@Suite struct IntegrityTests {
    /// How a stored object's file is damaged in a test.
    enum Flip: String, CaseIterable, CustomTestStringConvertible {
        /// One byte rewritten in place: size kept, mtime and ctime new.
        case inPlace
        /// The same, then the mtime (and atime) put back with `futimens`, as `touch -r` would:
        /// only the ctime tells the file changed.
        case mtimeRestored
        var testDescription: String { rawValue }
    }

    /// The by-digest lookup answered 200 for an object with a byte flipped. Now it answers 404,
    /// the object is in `quarantine/` with its sidecar (logged once), it is listed nowhere, and
    /// an upload of the same bytes stores a good copy that the lookup then finds.
    @Test(arguments: Flip.allCases)
    func aFlippedObjectIsQuarantinedAndTheSameBytesAreStoredAgain(_ flip: Flip) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(200_000, seed: 31)
        let hex = Digest.hex(Digest.sha256(body))
        let id = try Self.store(body, in: receiver)
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)").status == 200)

        try Self.flipByte(at: 1_234, of: receiver.directory + "/objects/" + id, flip: flip)

        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)").status == 404)
        #expect(try receiver.client().request("GET", "/objects/by-digest/\(hex)").status == 404)
        #expect(try receiver.client().request("GET", "/objects/\(id)").status == 404)
        #expect(try receiver.client().request("GET", "/objects/\(id)/content").status == 404)
        #expect(try receiver.objects().isEmpty)
        #expect(receiver.files(in: "objects").isEmpty)
        #expect(receiver.files(in: "quarantine") == [id, id + ".json"])
        let note = try Self.sidecar(receiver.directory + "/quarantine/\(id).json")
        #expect(note.quarantine?.from == "objects/\(id)")
        #expect(note.quarantine?.reason.contains("hash to") == true, "\(String(describing: note.quarantine))")
        // The corrupt bytes are kept as they were found.
        var corrupt = body
        corrupt[1_234] ^= 0x01
        #expect(FileManager.default.contents(atPath: receiver.directory + "/quarantine/\(id)") == Data(corrupt))
        let logged = receiver.log.lines.filter { $0.contains("moved with its sidecar to quarantine/") }
        #expect(logged.count == 1, "\(receiver.log.lines)")
        #expect(logged.first?.contains(id) == true && logged.first?.contains(hex) == true && logged.first?.contains("quarantine/\(id)") == true)

        let again = try receiver.client().request("POST", "/uploads", headers: [("Idempotency-Key", hex)], body: body)
        #expect(again.status == 201, "stored as a new object, not answered as a duplicate")
        let newID = try #require(again["x-server-resource-id"])
        #expect(newID != id)
        let hit = try receiver.client().request("HEAD", "/objects/by-digest/\(hex)")
        #expect(hit.status == 200)
        #expect(hit["x-server-resource-id"] == newID)
        #expect(try receiver.content(of: newID) == body)
        #expect(try receiver.objects().map(\.id) == [newID])
    }

    /// The dedupe at creation answered "duplicate" (200, nothing stored) with the corrupt copy's
    /// id. When the re-upload is the first request after the flip, it is stored afresh (201).
    @Test(arguments: Flip.allCases)
    func anUploadIsNeverADuplicateOfACorruptCopy(_ flip: Flip) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(50_000, seed: 32)
        let hex = Digest.hex(Digest.sha256(body))
        let id = try Self.store(body, in: receiver)
        try Self.flipByte(at: 0, of: receiver.directory + "/objects/" + id, flip: flip)

        for version in [nil, 8] {
            var headers = [("Idempotency-Key", hex)]
            if let version { headers += ResumableUploadTests.creationHeaders(version: version, complete: true) }
            let again = try receiver.client().request("POST", "/uploads", headers: headers, body: body)
            // The first stores a good copy; the second is a duplicate of that good copy.
            let stored = try #require(again["x-server-resource-id"])
            #expect(stored != id)
            #expect(try receiver.content(of: stored) == body)
        }
        #expect(receiver.files(in: "quarantine") == [id, id + ".json"])
        #expect(try receiver.objects().count == 1)
    }

    /// A file whose stamp changed but whose bytes did not (a `touch`, a copy back from a backup)
    /// is hashed again, answers as before, and its new stamp is recorded.
    @Test func aChangedStampOverIntactBytesIsHashedAgainAndRecorded() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(80_000, seed: 33)
        let hex = Digest.hex(Digest.sha256(body))
        let id = try Self.store(body, in: receiver)
        let sidecarPath = receiver.directory + "/objects/\(id).json"
        let recorded = try #require(try Self.sidecar(sidecarPath).contentStamp)
        #expect(recorded == (try Self.stamp(receiver.directory + "/objects/" + id)))

        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, receiver.directory + "/objects/" + id, &times, 0) == 0)
        let hit = try receiver.client().request("HEAD", "/objects/by-digest/\(hex)")
        #expect(hit.status == 200)
        #expect(hit["x-server-resource-id"] == id)
        let rerecorded = try #require(try Self.sidecar(sidecarPath).contentStamp)
        #expect(rerecorded.modifiedNanoseconds == 1_000_000_000 * 1_000_000_000)
        #expect(rerecorded == (try Self.stamp(receiver.directory + "/objects/" + id)))
        #expect(receiver.files(in: "quarantine").isEmpty)
    }

    /// Under `--layout path` the bytes are at `files/<library path>`, whose name need not be
    /// UTF-8: they are stamped, checked and moved aside from there, and the same bytes uploaded
    /// again take the path back.
    @Test func aCorruptObjectStoredByPathLeavesFilesForQuarantine() throws {
        let receiver = try TestReceiver { $0.layout = .path }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(9_000, seed: 38)
        let hex = Digest.hex(Digest.sha256(body))
        let headers = ProvenanceTests.provenanceHeaders(path: "caf%E9/caf%E9.jpg", size: body.count) + [("Idempotency-Key", hex)]
        let stored = try receiver.client().request("PUT", "/uploads", headers: headers, body: body)
        #expect(stored.status == 201)
        let id = try #require(stored["x-server-resource-id"])
        let sidecar = try Self.sidecar(receiver.directory + "/objects/\(id).json")
        #expect(sidecar.contentStamp?.size == Int64(body.count))
        let storedPath = try #require(sidecar.storedPath)
        let name: [UInt8] = Array("caf".utf8) + [0xE9]
        let file = Array((receiver.directory + "/files/").utf8) + name + [0x2F] + name + Array(".jpg".utf8)

        let fd = (file + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_RDWR) } }
        try #require(fd >= 0)
        var byte: UInt8 = 0
        #expect(pread(fd, &byte, 1, 4_000) == 1)
        byte ^= 0x80
        #expect(pwrite(fd, &byte, 1, 4_000) == 1)
        close(fd)

        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)").status == 404)
        #expect(receiver.files(in: "quarantine") == [id, id + ".json"])
        #expect(try Self.sidecar(receiver.directory + "/quarantine/\(id).json").quarantine?.from == storedPath)
        let gone = (file + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { access($0.baseAddress!, F_OK) } }
        #expect(gone != 0, "the corrupt bytes are still in files/")

        let again = try receiver.client().request("PUT", "/uploads", headers: headers, body: body)
        #expect(again.status == 201)
        let newID = try #require(again["x-server-resource-id"])
        #expect(try Self.sidecar(receiver.directory + "/objects/\(newID).json").storedPath == storedPath)
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)")["x-server-resource-id"] == newID)
    }

    /// A quarantine cut short by a crash (the bytes moved, the sidecar still in `objects/`) is
    /// finished at the next start, so the listing never shows an object whose bytes are gone.
    @Test func aQuarantineCutShortIsFinishedAtStart() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(5_000, seed: 39)
        let id: String
        do {
            let receiver = try TestReceiver(directory: directory)
            defer { receiver.stop() }
            id = try Self.store(body, in: receiver)
        }
        try FileManager.default.createDirectory(atPath: directory + "/quarantine", withIntermediateDirectories: false)
        try FileManager.default.moveItem(atPath: directory + "/objects/" + id, toPath: directory + "/quarantine/" + id)

        let receiver = try TestReceiver(directory: directory)
        defer { receiver.stop() }
        #expect(try receiver.objects().isEmpty)
        #expect(receiver.files(in: "objects").isEmpty)
        #expect(receiver.files(in: "quarantine") == [id, id + ".json"])
        #expect(try receiver.client().request("POST", "/uploads", headers: [("Idempotency-Key", Digest.hex(Digest.sha256(body)))], body: body).status == 201)
    }

    // MARK: Helpers

    /// Stores `body` with its digest as the idempotency key (as the client does); returns the id.
    static func store(_ body: [UInt8], in receiver: TestReceiver) throws -> String {
        let hex = Digest.hex(Digest.sha256(body))
        let stored = try receiver.client().request("POST", "/uploads", headers: [("Idempotency-Key", hex)], body: body)
        #expect(stored.status == 201)
        return try #require(stored["x-server-resource-id"])
    }

    /// Flips the low bit of the byte at `offset` in place, keeping the size (and with
    /// `.mtimeRestored` the access and modification times). Waits first until the coarse clock
    /// has passed the file's ctime, so the rewrite gets a later ctime even on kernels without
    /// fine-grained timestamps.
    static func flipByte(at offset: Int, of path: String, flip: Flip) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        let ctime = info.st_ctim
        var now = timespec()
        repeat {
            clock_gettime(CLOCK_REALTIME_COARSE, &now)
            if (now.tv_sec, now.tv_nsec) <= (ctime.tv_sec, ctime.tv_nsec) { usleep(1_000) }
        } while (now.tv_sec, now.tv_nsec) <= (ctime.tv_sec, ctime.tv_nsec)
        let fd = open(path, O_RDWR)
        guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        defer { close(fd) }
        var byte: UInt8 = 0
        guard pread(fd, &byte, 1, off_t(offset)) == 1 else { throw CocoaError(.fileReadUnknown) }
        byte ^= 0x01
        guard pwrite(fd, &byte, 1, off_t(offset)) == 1 else { throw CocoaError(.fileWriteUnknown) }
        if flip == .mtimeRestored {
            var times = [info.st_atim, info.st_mtim]
            guard futimens(fd, &times) == 0 else { throw CocoaError(.fileWriteUnknown) }
        }
        var after = stat()
        guard fstat(fd, &after) == 0 else { throw CocoaError(.fileReadUnknown) }
        #expect(after.st_size == info.st_size)
        if flip == .mtimeRestored {
            #expect(after.st_mtim.tv_sec == info.st_mtim.tv_sec && after.st_mtim.tv_nsec == info.st_mtim.tv_nsec)
        }
    }

    /// The file's stamp now, as the receiver records it.
    static func stamp(_ path: String) throws -> ContentStamp {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
        return ContentStamp(ReadOnlyFile.Stamp(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                                               modifiedNanoseconds: nanoseconds(info.st_mtim), changedNanoseconds: nanoseconds(info.st_ctim)))
    }

    /// Rewrites an object's sidecar so it records its file's current stamp: what a flip that
    /// changed no stamp at all (bit rot) looks like to the receiver.
    static func forgeStamp(of id: String, in receiver: TestReceiver) throws {
        try forgeStamp(of: id, directoryPath: receiver.directory)
    }

    static func forgeStamp(of id: String, directoryPath: String) throws {
        let sidecarPath = directoryPath + "/objects/\(id).json"
        var object = try sidecar(sidecarPath)
        object.contentStamp = try stamp(directoryPath + "/objects/" + id)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        try encoder.encode(object).write(to: URL(fileURLWithPath: sidecarPath))
    }

    static func sidecar(_ path: String) throws -> StoredObject {
        try sidecarDecoder().decode(StoredObject.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func sidecarDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
