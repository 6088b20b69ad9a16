import Foundation
import Receiver
import Testing
import UploadProtocol

/// A space per account: objects, sidecars and dedupe under `accounts/<name>/`, the device named
/// on each object (never its token), and a token revoked while its upload is in flight.
@Suite struct AccountSpaceTests {
    typealias Family = AccessTableTests.Family

    @Test func eachAccountHasItsOwnObjectsAndEachObjectNamesItsDevice() throws {
        let family = try Family()
        let receiver = family.receiver
        defer { receiver.stop(); receiver.removeDirectory() }
        let photo = TestReceiver.bytes(20_000, seed: 41)
        let hex = Digest.hex(Digest.sha256(photo))

        let annas = try receiver.client().request("POST", "/uploads", headers: family.phone.authorization, body: photo)
        #expect(annas.status == 201)
        let annaID = try #require(annas["x-server-resource-id"])
        // The same bytes are not Ben's: his pre-check misses, his upload stores his own copy.
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)", headers: family.benPhone.authorization).status == 404)
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(hex)", headers: family.phone.authorization).status == 200)
        let bens = try receiver.client().request("POST", "/uploads", headers: family.benPhone.authorization, body: photo)
        #expect(bens.status == 201)
        let benID = try #require(bens["x-server-resource-id"])
        #expect(benID != annaID)
        // The laptop's upload of other bytes, in Anna's account too.
        let laptops = try receiver.client().request("POST", "/uploads", headers: family.laptop.authorization,
                                                    body: TestReceiver.bytes(5_000, seed: 42))
        let laptopID = try #require(laptops["x-server-resource-id"])

        let dir = receiver.directory
        #expect(FileManager.default.fileExists(atPath: "\(dir)/accounts/anna/objects/\(annaID)"))
        #expect(FileManager.default.fileExists(atPath: "\(dir)/accounts/ben/objects/\(benID)"))
        #expect(receiver.files(in: "objects").isEmpty, "the default space holds nothing of theirs")
        let sidecar = try String(contentsOfFile: "\(dir)/accounts/anna/objects/\(annaID).json", encoding: .utf8)
        #expect(sidecar.contains("\"device\":\"anna-phone\""))

        // Anna's laptop lists Anna's objects, each with its device; Ben's are not there.
        let listing = try Self.objects(receiver, family.laptop)
        #expect(Set(listing.map(\.id)) == [annaID, laptopID])
        #expect(listing.first { $0.id == annaID }?.device == "anna-phone")
        #expect(listing.first { $0.id == laptopID }?.device == "anna-laptop")
        #expect(listing.allSatisfy { $0.account == "anna" })
        // The admin lists every account's.
        let everything = try Self.objects(receiver, family.admin)
        #expect(Set(everything.map(\.id)) == [annaID, laptopID, benID])
        #expect(everything.first { $0.id == benID }?.account == "ben")
        #expect(everything.first { $0.id == benID }?.device == "ben-phone")

        // No token's text anywhere: not in the receiver's files, not in its log, not in a listing.
        let listingText = try receiver.client().request("GET", "/objects", headers: family.admin.authorization).text
        for device in [family.phone, family.laptop, family.admin, family.benPhone] {
            #expect(Self.filesContaining(device.token, under: dir).isEmpty, "\(device.name)'s token is on disk")
            #expect(!receiver.log.lines.contains { $0.contains(device.token) }, "\(device.name)'s token is in the log")
            #expect(!listingText.contains(device.token))
        }
        #expect(receiver.log.lines.contains { $0.hasPrefix("POST /uploads 201") && $0.contains("device=ben/ben-phone") })
    }

    /// Revoked while its upload is in flight: the request under way was let in before, the next
    /// one is refused, and nothing is stored half (the partial stays a partial, never an object).
    @Test func aTokenRevokedDuringAnUploadIsRefusedAtTheNextRequest() throws {
        let family = try Family()
        let receiver = family.receiver
        defer { receiver.stop(); receiver.removeDirectory() }
        let photo = TestReceiver.bytes(200_000, seed: 77)
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: ResumableUploadTests.creationHeaders(version: 8, complete: false) + family.phone.authorization,
                                                    body: Array(photo[0..<50_000]))
        let path = try ResumableUploadTests.path(of: created["location"])

        // An append under way: its head and part of its body sent.
        let inFlight = try receiver.client()
        var head = "PATCH \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(family.phone.token)\r\n"
        for (name, value) in ResumableUploadTests.patchHeaders(version: 8, offset: 50_000, complete: true) { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(photo.count - 50_000)\r\n\r\n"
        #expect(inFlight.send(Array(head.utf8) + photo[50_000..<120_000]))

        let id = try #require(try AccountBook.load(directory: receiver.directory)?.tokens.first { $0.device == "anna-phone" }?.id)
        _ = try AccountBook.edit(directory: receiver.directory) { (book: inout AccountBook) throws(ReceiverError) in
            try book.revokeToken(id: id)
        }
        // Refused within a bounded wait (the receiver looks at the book at most once a second).
        let deadline = Date().addingTimeInterval(5)
        var status = 0
        while Date() < deadline {
            status = try receiver.client().request("OPTIONS", "/uploads", headers: family.phone.authorization).status
            if status == 401 { break }
            usleep(100_000)
        }
        #expect(status == 401)
        // The append under way is cut by its client; the resumption is refused.
        inFlight.finishSending()
        _ = try? inFlight.readResponse()
        let resumed = try receiver.client().request("PATCH", path,
                                                    headers: ResumableUploadTests.patchHeaders(version: 8, offset: 120_000, complete: true)
                                                        + family.phone.authorization,
                                                    body: Array(photo[120_000...]))
        #expect(resumed.status == 401)
        // Nothing stored half: no object, only the partial upload Anna's admin can still see.
        #expect(try Self.objects(receiver, family.admin).isEmpty)
        let objects = (try? FileManager.default.contentsOfDirectory(atPath: receiver.directory + "/accounts/anna/objects")) ?? []
        #expect(objects.isEmpty, "\(objects)")
        let probe = try receiver.client().request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "8")] + family.admin.authorization)
        #expect(probe.status == 204 && probe["upload-complete"] == "?0")
        // The laptop, not revoked, goes on.
        #expect(try receiver.client().request("POST", "/uploads", headers: family.laptop.authorization, body: photo).status == 201)
    }

    /// What a killed writer of the account files left (a temporary file beside the book or
    /// beside `tokens-used.json`) is removed: by the next edit, and by `serve` as it starts.
    /// Another dot file is left alone.
    @Test func temporaryFilesOfKilledWritersAreRemoved() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in try book.addAccount("anna", now: Date()) }
        let stale = ["\(directory)/.accounts.json.0123456789abcdef.tmp", "\(directory)/.tokens-used.json.fedcba9876543210.tmp"]
        let other = "\(directory)/.keep.tmp"
        for path in stale + [other] { #expect(FileManager.default.createFile(atPath: path, contents: Data("{".utf8))) }
        _ = try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in try book.addAccount("ben", now: Date()) }
        #expect(!FileManager.default.fileExists(atPath: stale[0]), "the edit removes the book's")
        #expect(FileManager.default.fileExists(atPath: stale[1]), "an edit leaves serve's own to serve")
        let receiver = try TestReceiver(directory: directory)
        defer { receiver.stop() }
        #expect(!FileManager.default.fileExists(atPath: stale[1]), "serve removes its own as it starts")
        #expect(FileManager.default.fileExists(atPath: other))
        #expect(try AccountBook.load(directory: directory)?.accounts.map(\.name) == ["anna", "ben"])
    }

    static func objects(_ receiver: TestReceiver, _ device: Family.Device) throws -> [StoredObject] {
        let response = try receiver.client().request("GET", "/objects", headers: device.authorization)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode([StoredObject].self, from: Data(response.body))
    }

    /// Every regular file under `root` whose bytes contain `text`.
    static func filesContaining(_ text: String, under root: String) -> [String] {
        let needle = Data(text.utf8)
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return files.filter { name in
            guard let data = FileManager.default.contents(atPath: root + "/" + name) else { return false }
            return data.range(of: needle) != nil
        }
    }
}
