import Foundation
import Receiver
import Testing
import UploadProtocol

/// The abuse limits of a receiver shared by several devices: an account's quota (`507` and a
/// problem body before any byte is taken) and the upload requests one token may have in
/// progress (`429`, `Retry-After`).
@Suite struct AccountLimitTests {
    typealias Family = AccessTableTests.Family

    @Test func anUploadPastTheAccountsQuotaIsRefusedBeforeItsBytesAreTaken() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        _ = try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in
            try book.addAccount("anna", now: Date())
            try book.setQuota("anna", bytes: 50_000, now: Date())
        }
        let family = try Family(directory: directory)
        let receiver = family.receiver
        defer { receiver.stop(); receiver.removeDirectory() }

        #expect(try receiver.client().request("POST", "/uploads", headers: family.phone.authorization,
                                              body: TestReceiver.bytes(30_000, seed: 1)).status == 201)
        let plain = try receiver.client().request("POST", "/uploads", headers: family.phone.authorization,
                                                  body: TestReceiver.bytes(30_000, seed: 2))
        #expect(plain.status == 507)
        #expect(plain["content-type"] == "application/problem+json")
        let problem = try #require(try JSONSerialization.jsonObject(with: Data(plain.body)) as? [String: Any])
        #expect(problem["quota"] as? Int == 50_000)
        #expect(problem["used"] as? Int == 30_000)
        #expect((problem["detail"] as? String)?.contains("account anna holds 30000 bytes of its 50000-byte quota") == true)
        // A resumable upload announcing its length is refused at creation, before any byte.
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: ResumableUploadTests.creationHeaders(version: 8, complete: false,
                                                                                                  extra: [("Upload-Length", "30000")])
                                                        + family.laptop.authorization, body: TestReceiver.bytes(1_000, seed: 3))
        #expect(created.status == 507)
        // One that does not announce it is refused at the append that would pass the quota.
        let open = try receiver.client().request("POST", "/uploads",
                                                 headers: ResumableUploadTests.creationHeaders(version: 8, complete: false) + family.phone.authorization,
                                                 body: TestReceiver.bytes(1_000, seed: 4))
        let path = try ResumableUploadTests.path(of: open["location"])
        let append = try receiver.client().request("PATCH", path,
                                                   headers: ResumableUploadTests.patchHeaders(version: 8, offset: 1_000, complete: true)
                                                       + family.phone.authorization, body: TestReceiver.bytes(29_000, seed: 5))
        #expect(append.status == 507)
        #expect(try AccountSpaceTests.objects(receiver, family.admin).filter { $0.account == "anna" }.count == 1)
        #expect(receiver.log.lines.contains { $0.contains("507") && $0.contains("over-quota") })

        // Ben has no quota; raising Anna's while serve runs lets her upload within a bounded wait.
        #expect(try receiver.client().request("POST", "/uploads", headers: family.benPhone.authorization,
                                              body: TestReceiver.bytes(60_000, seed: 6)).status == 201)
        _ = try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in
            try book.setQuota("anna", bytes: 100_000, now: Date())
        }
        let deadline = Date().addingTimeInterval(5)
        var status = 0
        while Date() < deadline {
            status = try receiver.client().request("POST", "/uploads", headers: family.phone.authorization,
                                                   body: TestReceiver.bytes(30_000, seed: 2)).status
            if status == 201 { break }
            usleep(100_000)
        }
        #expect(status == 201)
    }

    @Test func aTokenWithTooManyUploadsInProgressGets429AndOthersGoOn() throws {
        let family = try Family { $0.uploadsPerToken = 2 }
        let receiver = family.receiver
        defer { receiver.stop(); receiver.removeDirectory() }
        // Two creations of the phone's in progress: head and half the body sent, the 104 read.
        let body = TestReceiver.bytes(40_000, seed: 9)
        var inFlight: [RawHTTPClient] = []
        for _ in 0..<2 {
            let client = try receiver.client()
            var head = "POST /uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(family.phone.token)\r\n"
            for (name, value) in ResumableUploadTests.creationHeaders(version: 8, complete: true) { head += "\(name): \(value)\r\n" }
            head += "Content-Length: \(body.count)\r\n\r\n"
            #expect(client.send(Array(head.utf8) + body[0..<20_000]))
            #expect(try client.readNext().status == 104)
            inFlight.append(client)
        }
        let third = try receiver.client().request("POST", "/uploads", headers: family.phone.authorization, body: TestReceiver.bytes(100, seed: 10))
        #expect(third.status == 429)
        #expect(third["retry-after"] == "1")
        #expect(third["content-type"] == "application/problem+json")
        #expect(third.text.contains("\"limit\":2"))
        // Another device of the account is not held up.
        #expect(try receiver.client().request("POST", "/uploads", headers: family.laptop.authorization,
                                              body: TestReceiver.bytes(100, seed: 11)).status == 201)
        // One ends: the phone may start another.
        #expect(inFlight[0].send(Array(body[20_000...])))
        #expect(try inFlight[0].readResponse().status == 201)
        #expect(try receiver.client().request("POST", "/uploads", headers: family.phone.authorization,
                                              body: TestReceiver.bytes(100, seed: 12)).status == 201)
    }
}
