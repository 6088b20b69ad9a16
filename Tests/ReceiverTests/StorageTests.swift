import Foundation
import Receiver
import Testing
import UploadProtocol

/// What the receiver keeps: objects with sidecars, dedupe, digests, tokens, restarts, expiry.
@Suite struct StorageTests {
    @Test(arguments: ["POST", "PUT"])
    func plainUploadKeepsVerdictAndFilename(method: String) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(70_000)
        let verdict = #"{"faces":1,"label":"portrait"}"#
        let response = try receiver.client().request(method, "/uploads", headers: [
            ("Content-Disposition", ResumableUpload.contentDisposition(filename: "Été 2024.jpg")),
            ("X-Verdict", verdict),
            ("Repr-Digest", Digest.reprDigest(body)),
        ], body: body)
        #expect(response.status == 201)
        let id = try #require(response["x-server-resource-id"])
        let objects = try receiver.objects()
        #expect(objects.map(\.id) == [id])
        #expect(objects.first?.filename == "Été 2024.jpg")
        #expect(objects.first?.verdict == verdict)
        #expect(objects.first?.size == 70_000)
        #expect(objects.first?.sha256 == Digest.hex(Digest.sha256(body)))
        #expect(try receiver.content(of: id) == body)
        #expect(receiver.files(in: "objects") == [id, id + ".json"].sorted())
        #expect(receiver.files(in: "tmp").isEmpty)
    }

    @Test func duplicateIdempotencyKeyStoresNothingNew() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(10_000, seed: 9)
        let key = Digest.hex(Digest.sha256(body))
        let first = try receiver.client().request("POST", "/uploads", headers: [("Idempotency-Key", key)], body: body)
        #expect(first.status == 201)
        let second = try receiver.client().request("PUT", "/uploads", headers: [("Idempotency-Key", key)], body: body)
        #expect(second.status == 200)
        // A resumable upload of the same photo is deduplicated too.
        let third = try receiver.client().request("POST", "/uploads", headers: ResumableUploadTests.creationHeaders(
            version: 6, complete: true, extra: [("Idempotency-Key", key)]), body: body)
        #expect(third.status == 201)
        let id = try #require(first["x-server-resource-id"])
        #expect(second["x-server-resource-id"] == id)
        #expect(third["x-server-resource-id"] == id)
        #expect(try receiver.objects().count == 1)
        #expect(receiver.files(in: "objects").count == 2)
        #expect(receiver.files(in: "uploads").allSatisfy { !$0.hasSuffix(".part") })
    }

    /// Anyone may POST (no token by default), so junk stored first under a
    /// photo's Idempotency-Key must not stand in for the photo. The real upload, plain or
    /// resumable, is stored as an object of its own and named by its digest in the answer; a
    /// repeat of it then dedupes to it, across a restart too.
    @Test(arguments: [false, true])
    func junkStoredUnderAPhotosKeyIsNotADuplicateOfThePhoto(resumable: Bool) throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let photo = TestReceiver.bytes(20_000, seed: 21)
        let junk = TestReceiver.bytes(300, seed: 22)
        let key = Digest.hex(Digest.sha256(photo))
        func upload(_ receiver: TestReceiver, _ body: [UInt8], digest: Bool) throws -> RawHTTPClient.Response {
            let extra = [("Idempotency-Key", key)] + (digest ? [("Repr-Digest", Digest.reprDigest(body))] : [])
            if resumable {
                return try receiver.client().request("POST", "/uploads", headers: ResumableUploadTests.creationHeaders(
                    version: 6, complete: true, extra: extra), body: body)
            }
            return try receiver.client().request("POST", "/uploads", headers: extra, body: body)
        }
        let receiver = try TestReceiver(directory: directory)
        let poisoned = try upload(receiver, junk, digest: false)
        #expect(poisoned.status == 201)
        let real = try upload(receiver, photo, digest: true)
        #expect(real.status == 201)
        let realID = try #require(real["x-server-resource-id"])
        #expect(realID != poisoned["x-server-resource-id"])
        #expect(try receiver.content(of: realID) == photo)
        #expect(real["repr-digest"] == Digest.reprDigest(photo))
        let again = try upload(receiver, photo, digest: true)
        #expect(again["x-server-resource-id"] == realID)
        #expect(try receiver.objects().count == 2)
        receiver.stop()
        let restarted = try TestReceiver(directory: directory)
        defer { restarted.stop() }
        #expect(try upload(restarted, photo, digest: true)["x-server-resource-id"] == realID)
        #expect(try restarted.objects().count == 2)
    }

    @Test(arguments: [false, true])
    func digestMismatchStoresNothing(resumable: Bool) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(5_000, seed: 2)
        var headers = [("Repr-Digest", Digest.reprDigest(Array(body.reversed())))]
        if resumable { headers = ResumableUploadTests.creationHeaders(version: 8, complete: true, extra: headers) }
        let response = try receiver.client().request("POST", "/uploads", headers: headers, body: body)
        #expect(response.status == 400)
        #expect(try receiver.objects().isEmpty)
        #expect(receiver.files(in: "objects").isEmpty)
        #expect(receiver.files(in: "tmp").isEmpty)
        #expect(receiver.files(in: "uploads").isEmpty)
    }

    /// An upload sent in three appends is hashed as it arrives (a restarted receiver reads the
    /// earlier bytes back instead), and checked against a `Repr-Digest` that came with the
    /// creation or only with the completing append.
    @Test(arguments: [(true, false, false), (false, false, false), (true, true, false), (true, false, true),
                      (false, true, true), (true, true, true)])
    func digestIsCheckedAcrossAppendsAndRestarts(matching: Bool, restartBetween: Bool, digestLast: Bool) throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(150_000, seed: 41)
        let digest = [("Repr-Digest", Digest.reprDigest(matching ? body : Array(body.dropFirst())))]
        var receiver = try TestReceiver(directory: directory)
        defer { receiver.stop() }
        let created = try receiver.client().request("POST", "/uploads", headers: ResumableUploadTests.creationHeaders(
            version: 8, complete: false, extra: digestLast ? [] : digest), body: Array(body[0..<50_000]))
        let path = try ResumableUploadTests.path(of: created["location"])
        let middle = try receiver.client().request("PATCH", path,
                                                   headers: ResumableUploadTests.patchHeaders(version: 8, offset: 50_000, complete: false),
                                                   body: Array(body[50_000..<100_000]))
        #expect(middle.status == 204)
        if restartBetween {
            receiver.stop()
            receiver = try TestReceiver(directory: directory)
        }
        let last = try receiver.client().request("PATCH", path,
                                                 headers: ResumableUploadTests.patchHeaders(version: 8, offset: 100_000, complete: true)
                                                    + (digestLast ? digest : []),
                                                 body: Array(body[100_000...]))
        #expect(last.status == (matching ? 201 : 400))
        #expect(try receiver.objects().map(\.sha256) == (matching ? [Digest.hex(Digest.sha256(body))] : []))
        receiver.stop()  // a request's log line is written after its response: wait for the threads
        #expect(receiver.log.lines.contains { $0.contains("digest read back") } == restartBetween)
    }

    /// An upload finished across several requests is verified by reading the stored bytes back.
    @Test(arguments: [true, false])
    func digestIsVerifiedAcrossAppends(matching: Bool) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(90_000, seed: 31)
        let digest = Digest.reprDigest(matching ? body : Array(body.dropLast()))
        let created = try receiver.client().request("POST", "/uploads", headers: ResumableUploadTests.creationHeaders(
            version: 7, complete: false, extra: [("Repr-Digest", digest)]), body: Array(body[0..<40_000]))
        let path = try ResumableUploadTests.path(of: created["location"])
        let last = try receiver.client().request("PATCH", path,
                                                 headers: ResumableUploadTests.patchHeaders(version: 7, offset: 40_000, complete: true),
                                                 body: Array(body[40_000...]))
        if matching {
            #expect(last.status == 201)
            let objects = try receiver.objects()
            #expect(objects.map(\.sha256) == [Digest.hex(Digest.sha256(body))])
        } else {
            #expect(last.status == 400)
            #expect(try receiver.objects().isEmpty)
            #expect(receiver.files(in: "uploads").isEmpty)
            #expect(try receiver.client().request("HEAD", path).status == 404)
        }
    }

    @Test func malformedReprDigestIsRefused() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let response = try receiver.client().request("POST", "/uploads", headers: [("Repr-Digest", "sha-256=:not base64!:")],
                                                     body: Array("x".utf8))
        #expect(response.status == 400)
        #expect(try receiver.objects().isEmpty)
    }

    /// The comparison kept only 8 bits of the length difference, so the token
    /// followed by 256 (or 512, ...) more bytes was accepted.
    @Test(arguments: [1, 255, 256, 512, 1_024])
    func aTokenWithBytesAppendedIsRefused(extra: Int) throws {
        let secret = "s3cr3t-token-value"
        let receiver = try TestReceiver { $0.token = secret }
        defer { receiver.stop(); receiver.removeDirectory() }
        let presented = secret + String(repeating: "A", count: extra)
        let response = try receiver.client().request("POST", "/uploads", headers: [("Authorization", "Bearer \(presented)")],
                                                      body: Array("photo".utf8))
        #expect(response.status == 401)
        #expect(receiver.files(in: "objects").isEmpty)
    }

    @Test func bearerTokenIsRequiredAndNeverLogged() throws {
        let secret = "s3cr3t-token-value"
        let receiver = try TestReceiver { $0.token = secret + "\n" }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = Array("photo".utf8)
        #expect(try receiver.client().request("POST", "/uploads", body: body).status == 401)
        #expect(try receiver.client().request("POST", "/uploads", headers: [("Authorization", "Bearer wrong")], body: body).status == 401)
        #expect(try receiver.client().request("POST", "/uploads", headers: [("Authorization", "Bearer \(secret)x")], body: body).status == 401)
        #expect(try receiver.client().request("OPTIONS", "/uploads").status == 401)
        #expect(try receiver.client().request("GET", "/objects").status == 401)
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
        #expect(receiver.files(in: "objects").isEmpty)
        let accepted = try receiver.client().request("POST", "/uploads", headers: [("Authorization", "bearer \(secret)")], body: body)
        #expect(accepted.status == 201)
        receiver.stop()  // waits for the connection threads, so every log line is written
        #expect(receiver.log.lines.filter { $0.contains(" 401 ") }.count == 5)
        #expect(!receiver.log.lines.contains { $0.contains(secret) })
    }

    @Test func oversizeIsRefused() throws {
        let receiver = try TestReceiver { $0.maxSize = 1_000 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(1_001)
        #expect(try receiver.client().request("POST", "/uploads", body: body).status == 413)
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: ResumableUploadTests.creationHeaders(version: 6, complete: false),
                                                    body: Array(body[0..<600]))
        #expect(created.status == 201)
        let append = try receiver.client().request("PATCH", try ResumableUploadTests.path(of: created["location"]),
                                                   headers: ResumableUploadTests.patchHeaders(version: 6, offset: 600, complete: true),
                                                   body: Array(body[600...]))
        #expect(append.status == 413)
        #expect(try receiver.client().request("POST", "/uploads", body: Array(body[0..<1_000])).status == 201)
    }

    @Test func restartKeepsPartialUploads() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(400_000, seed: 21)
        let path: String
        do {
            let first = try TestReceiver(directory: directory)
            path = try first.createPartialUpload(body[0..<150_000], version: 6)
            // A PATCH in flight when the receiver stops keeps its durable prefix.
            let client = try first.client()
            var head = "PATCH \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 250000\r\nExpect: 100-continue\r\n"
            for (name, value) in ResumableUploadTests.patchHeaders(version: 6, offset: 150_000, complete: true) {
                head += "\(name): \(value)\r\n"
            }
            client.send(Array((head + "\r\n").utf8))
            #expect(try client.readNext().status == 100)
            client.send(Array(body[150_000..<200_000]))
            first.stop()
            #expect(client.isClosedByServer())
        }
        let second = try TestReceiver(directory: directory)
        defer { second.stop() }
        let probe = try second.client().request("HEAD", path)
        #expect(probe.status == 204)
        let offset = try #require(Int(probe["upload-offset"] ?? ""))
        #expect((150_000...200_000).contains(offset))
        try second.completeUpload(path, body: body, from: offset, version: 6)
    }

    @Test func restartKeepsObjectsAndDedupeIndex() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(1_234, seed: 4)
        let first = try TestReceiver(directory: directory)
        let stored = try first.client().request("POST", "/uploads", headers: [("Idempotency-Key", "k1")], body: body)
        first.stop()
        let second = try TestReceiver(directory: directory)
        defer { second.stop() }
        let again = try second.client().request("POST", "/uploads", headers: [("Idempotency-Key", "k1")], body: body)
        #expect(again.status == 200)
        #expect(again["x-server-resource-id"] == stored["x-server-resource-id"])
        #expect(try second.objects().count == 1)
    }

    /// The inode number of `path` (tells a file rewritten in place from one replaced by a rename).
    private static func inode(_ path: String) throws -> UInt64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require((attributes[.systemFileNumber] as? NSNumber)?.uint64Value)
    }

    /// Completing an upload leaves its record file as it is (replacing it would delete a file on
    /// every upload, which slows the next file creations on ext4), yet HEAD reports the upload
    /// complete with the object's id, also after a restart.
    @Test func completionKeepsTheRecordFileAndHeadStillSaysComplete() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(70_000, seed: 31)
        let path: String
        let objectID: String
        do {
            let receiver = try TestReceiver(directory: directory)
            defer { receiver.stop() }
            path = try receiver.createPartialUpload(body[0..<30_000], version: 8)
            let record = directory + "/uploads/" + path.dropFirst("/uploads/".count) + ".json"
            let before = try Self.inode(record)
            let last = try receiver.client().request("PATCH", path,
                                                     headers: ResumableUploadTests.patchHeaders(version: 8, offset: 30_000, complete: true),
                                                     body: Array(body[30_000...]))
            #expect(last.status == 201)
            objectID = try #require(last["x-server-resource-id"])
            #expect(try Self.inode(record) == before, "the record was replaced")
            #expect(try receiver.content(of: objectID) == body)
        }
        let restarted = try TestReceiver(directory: directory)
        defer { restarted.stop() }
        let head = try restarted.client().request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")])
        #expect(head.status == 204)
        #expect(head["upload-complete"] == "?1")
        #expect(head["upload-offset"] == "70000")
        #expect(head["upload-length"] == "70000")
        #expect(head["x-server-resource-id"] == objectID)
        let again = try restarted.client().request("PATCH", path,
                                                   headers: ResumableUploadTests.patchHeaders(version: 8, offset: 70_000, complete: true),
                                                   body: Array("more".utf8))
        #expect(again.status == 400)
        #expect(try restarted.objects().count == 1)
    }

    /// A resumable upload whose content was already stored under its idempotency key reports the
    /// first object, not the id it had reserved for itself.
    @Test func completedDuplicateUploadReportsTheFirstObject() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(5_000, seed: 12)
        let key = [("Idempotency-Key", "same-photo")]
        let first = try receiver.client().request("POST", "/uploads",
                                                  headers: ResumableUploadTests.creationHeaders(version: 6, complete: true, extra: key),
                                                  body: body)
        let second = try receiver.client().request("POST", "/uploads",
                                                   headers: ResumableUploadTests.creationHeaders(version: 6, complete: true, extra: key),
                                                   body: body)
        let firstID = try #require(first["x-server-resource-id"])
        #expect(second.status == 201)
        #expect(second["x-server-resource-id"] == firstID)
        let head = try receiver.client().request("HEAD", try ResumableUploadTests.path(of: second["location"]))
        #expect(head.status == 204)
        #expect(head["upload-complete"] == "?1")
        #expect(head["x-server-resource-id"] == firstID)
        #expect(try receiver.objects().map(\.id) == [firstID])
    }

    /// A completed upload's URL answers HEAD for the partial TTL counted from its completion.
    @Test func completedUploadsExpireCountingFromCompletion() throws {
        let receiver = try TestReceiver { $0.partialTTL = 600 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(2_000, seed: 5)
        let path = try receiver.createPartialUpload(body[0..<1_000], version: 8)
        receiver.clock.advance(by: 500)
        let last = try receiver.client().request("PATCH", path,
                                                 headers: ResumableUploadTests.patchHeaders(version: 8, offset: 1_000, complete: true),
                                                 body: Array(body[1_000...]))
        #expect(last.status == 201)
        receiver.clock.advance(by: 500)  // 1000 s after creation, 500 s after completion
        #expect(try receiver.client().request("HEAD", path).status == 204)
        receiver.clock.advance(by: 200)
        #expect(try receiver.client().request("HEAD", path).status == 404)
        #expect(try receiver.objects().count == 1, "expiry removes the upload, never the object")
    }

    @Test func abandonedPartialsExpire() throws {
        let receiver = try TestReceiver { $0.partialTTL = 600; $0.sweepInterval = 0.05 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: ResumableUploadTests.creationHeaders(version: 8, complete: false),
                                                    body: Array("abandoned".utf8))
        let kept = try receiver.client().request("POST", "/uploads",
                                                 headers: ResumableUploadTests.creationHeaders(version: 8, complete: false),
                                                 body: Array("active".utf8))
        let path = try ResumableUploadTests.path(of: created["location"])
        let keptPath = try ResumableUploadTests.path(of: kept["location"])
        #expect(receiver.files(in: "uploads").count == 4)
        receiver.clock.advance(by: 400)
        #expect(try receiver.client().request("HEAD", keptPath).status == 204)  // not yet expired
        let touch = try receiver.client().request("PATCH", keptPath,
                                                  headers: ResumableUploadTests.patchHeaders(version: 8, offset: 6, complete: false),
                                                  body: Array("!".utf8))
        #expect(touch.status == 204)
        receiver.clock.advance(by: 300)  // 700 s after the first, 300 s after the append
        #expect(try receiver.client().request("HEAD", path).status == 404)
        #expect(try receiver.client().request("HEAD", keptPath).status == 204)
        #expect(receiver.files(in: "uploads").count == 2)
        receiver.clock.advance(by: 700)
        // No request: the background sweep removes it.
        let deadline = ContinuousClock.now + .seconds(10)
        while !receiver.files(in: "uploads").isEmpty && ContinuousClock.now < deadline { usleep(20_000) }
        #expect(receiver.files(in: "uploads").isEmpty, "\(receiver.log.lines)")
    }
}
