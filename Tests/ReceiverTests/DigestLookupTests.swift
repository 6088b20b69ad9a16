import Foundation
import Receiver
import Testing
import UploadProtocol

/// The hash pre-check's lookup, `HEAD|GET /objects/by-digest/<sha256>`.
@Suite struct DigestLookupTests {
    @Test func aStoredObjectIsFoundByItsDigestAndOtherContentIsNot() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(30_000, seed: 5)
        let hex = Digest.hex(Digest.sha256(body))
        let missBefore = try receiver.client().request("HEAD", "/objects/by-digest/\(hex)")
        #expect(missBefore.status == 404)
        let stored = try receiver.client().request("POST", "/uploads", headers: [("Idempotency-Key", hex)], body: body)
        #expect(stored.status == 201)
        let id = try #require(stored["x-server-resource-id"])

        let hit = try receiver.client().request("HEAD", "/objects/by-digest/\(hex)")
        #expect(hit.status == 200)
        #expect(hit["x-server-resource-id"] == id)
        #expect(hit["repr-digest"] == Digest.reprDigest(body))
        #expect(hit.body.isEmpty)
        // Upper-case hex names the same content; GET gives the sidecar.
        let get = try receiver.client().request("GET", "/objects/by-digest/\(hex.uppercased())")
        #expect(get.status == 200)
        #expect(get["x-server-resource-id"] == id)
        #expect(get.text.contains("\"sha256\":\"\(hex)\""))

        let other = Digest.hex(Digest.sha256(TestReceiver.bytes(30_000, seed: 6)))
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(other)").status == 404)
        #expect(receiver.log.lines.contains { $0.hasPrefix("HEAD /objects/by-digest/\(hex) 200 digest-hit") })
    }

    /// The digest is keyed by content the receiver hashed itself: an upload without an
    /// idempotency key is found too, and a restarted receiver still finds it.
    @Test func anObjectWithoutAKeyIsFoundAfterARestart() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(5_000, seed: 8)
        let hex = Digest.hex(Digest.sha256(body))
        let first = try TestReceiver(directory: directory)
        let id = try #require(try first.client().request("PUT", "/uploads", body: body)["x-server-resource-id"])
        first.stop()
        let second = try TestReceiver(directory: directory)
        defer { second.stop() }
        let hit = try second.client().request("HEAD", "/objects/by-digest/\(hex)")
        #expect(hit.status == 200)
        #expect(hit["x-server-resource-id"] == id)
    }

    @Test(arguments: ["abc", String(repeating: "g", count: 64), String(repeating: "a", count: 63), String(repeating: "a", count: 66)])
    func aMalformedDigestIsABadRequest(digest: String) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(digest)").status == 400)
        #expect(try receiver.client().request("GET", "/objects/by-digest/\(digest)").status == 400)
    }

    @Test func theLookupNeedsTheToken() throws {
        let receiver = try TestReceiver { $0.token = "t0k" }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(4_000, seed: 3)
        let hex = Digest.hex(Digest.sha256(body))
        let stored = try receiver.client().request("PUT", "/uploads", headers: [("Authorization", "Bearer t0k")], body: body)
        #expect(stored.status == 201)
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)").status == 401)
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)",
                                              headers: [("Authorization", "Bearer wrong")]).status == 401)
        let hit = try receiver.client().request("HEAD", "/objects/by-digest/\(hex)", headers: [("Authorization", "Bearer t0k")])
        #expect(hit.status == 200)
        #expect(hit["x-server-resource-id"] == stored["x-server-resource-id"])
    }
}
