import Foundation
import Receiver
import Testing
import UploadProtocol

/// The server side of draft-ietf-httpbis-resumable-upload, interop versions 3 to 8, spoken over
/// raw sockets.
@Suite struct ResumableUploadTests {
    static let versions = Array(ResumableUpload.supportedInteropVersions)

    /// The path of an upload URL (the receiver sends paths; an absolute URL is cut to its path).
    static func path(of location: String?) throws -> String {
        let location = try #require(location)
        let range = try #require(location.range(of: "/uploads/"))
        return String(location[range.lowerBound...])
    }

    static func creationHeaders(version: Int, complete: Bool, extra: [(String, String)] = []) -> [(String, String)] {
        let completion = ResumableUpload.completionHeader(complete: complete, interopVersion: version)
        return [("Upload-Draft-Interop-Version", String(version)), (completion.name, completion.value)] + extra
    }

    static func patchHeaders(version: Int, offset: Int, complete: Bool) -> [(String, String)] {
        var headers = creationHeaders(version: version, complete: complete, extra: [("Upload-Offset", String(offset))])
        if version >= 6 { headers.append(("Content-Type", ResumableUpload.partialUploadMediaType)) }
        return headers
    }

    @Test(arguments: versions)
    func optionsAnnouncesLimitsPerVersion(version: Int) throws {
        let receiver = try TestReceiver { $0.maxSize = 5_000_000; $0.partialTTL = 3_600 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let response = try receiver.client().request("OPTIONS", "/uploads",
                                                     headers: [("Upload-Draft-Interop-Version", String(version))])
        #expect(response.status == 200)
        let field = try #require(response["upload-limit"])
        #expect(UploadLimits(fieldValue: field) == UploadLimits(maxSize: 5_000_000, maxAge: 3_600))
        #expect(field.contains(version <= 6 ? "expires=3600" : "max-age=3600"))
        #expect(!field.contains(version <= 6 ? "max-age" : "expires"))
    }

    @Test func optionsWithoutVersionStillParses() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let response = try receiver.client().request("OPTIONS", "/uploads")
        #expect(response.status == 200)
        #expect(UploadLimits(fieldValue: response["upload-limit"] ?? "") != nil)
    }

    @Test(arguments: versions)
    func creationSends104ThenCreated(version: Int) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(200_000, seed: UInt64(version))
        let client = try receiver.client()
        client.sendRequest("POST", "/uploads", headers: Self.creationHeaders(version: version, complete: true), body: body)
        let (interim, final) = try client.readResponses()
        #expect(interim.count == 1)
        let resumption = try #require(interim.first)
        #expect(resumption.status == 104)
        #expect(resumption["upload-draft-interop-version"] == String(version))
        #expect(resumption["location"] != nil)
        #expect(final.status == 201)
        #expect(final["location"] == resumption["location"])
        #expect(final["upload-offset"] == String(body.count))
        let completion = ResumableUpload.completionHeader(complete: true, interopVersion: version)
        #expect(final[completion.name] == completion.value)
        let id = try #require(final["x-server-resource-id"])
        #expect(try receiver.content(of: id) == body)
        // The finished upload still answers HEAD, as complete.
        let head = try receiver.client().request("HEAD", try Self.path(of: final["location"]),
                                                 headers: [("Upload-Draft-Interop-Version", String(version))])
        #expect(head.status == 204)
        #expect(head["upload-offset"] == String(body.count))
        #expect(head[completion.name] == completion.value)
    }

    @Test(arguments: [nil, "2", "9", "abc"] as [String?])
    func missingOrUnknownVersionIsAPlainUpload(version: String?) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        var headers = [("Upload-Complete", "?1")]
        if let version { headers.append(("Upload-Draft-Interop-Version", version)) }
        let client = try receiver.client()
        client.sendRequest("POST", "/uploads", headers: headers, body: Array("plain".utf8))
        let (interim, final) = try client.readResponses()
        #expect(interim.isEmpty)
        #expect(final.status == 201)
        #expect(final["upload-offset"] == nil)
        let id = try #require(final["x-server-resource-id"])
        #expect(try receiver.content(of: id) == Array("plain".utf8))
    }

    @Test(arguments: versions)
    func emptyCreationThenAppends(version: Int) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(100_000, seed: 7)
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: Self.creationHeaders(version: version, complete: false), body: [])
        #expect(created.status == 201)
        #expect(created["upload-offset"] == "0")
        let path = try Self.path(of: created["location"])

        let client = try receiver.client()  // one keep-alive connection for the appends
        let first = try client.request("PATCH", path, headers: Self.patchHeaders(version: version, offset: 0, complete: false),
                                       body: Array(body[0..<60_000]))
        #expect(first.status == 204)
        #expect(first["upload-offset"] == "60000")
        let head = try client.request("HEAD", path, headers: [("Upload-Draft-Interop-Version", String(version))])
        #expect(head.status == 204)
        #expect(head["upload-offset"] == "60000")
        #expect(head["cache-control"] == "no-store")
        let incomplete = ResumableUpload.completionHeader(complete: false, interopVersion: version)
        #expect(head[incomplete.name] == incomplete.value)

        let last = try client.request("PATCH", path, headers: Self.patchHeaders(version: version, offset: 60_000, complete: true),
                                      body: Array(body[60_000...]))
        #expect(last.status == 201)
        let id = try #require(last["x-server-resource-id"])
        #expect(try receiver.content(of: id) == body)
        #expect(receiver.files(in: "uploads").allSatisfy { !$0.hasSuffix(".part") })
    }

    /// Behind a TLS-terminating reverse proxy. nginx speaks HTTP/1.0 to its
    /// backend by default, passes a 1xx on to its client as the final response (the real one then
    /// arriving as its body), and `proxy_set_header Host $host` drops the port. So no 1xx goes to an
    /// HTTP/1.0 client, and Location is a path, which the client resolves against the https URL it
    /// used, whatever the Host said.
    @Test(arguments: [0, 1])
    func behindAReverseProxyLocationIsAPathAndHTTP10GetsNoInterim(minorVersion: Int) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(50_000, seed: UInt64(21 + minorVersion))
        let client = try receiver.client()
        var head = "POST /uploads HTTP/1.\(minorVersion)\r\nHost: photos.example\r\nX-Forwarded-Proto: https\r\n"
            + "Connection: close\r\nExpect: 100-continue\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in Self.creationHeaders(version: 6, complete: true) { head += "\(name): \(value)\r\n" }
        client.send(Array((head + "\r\n").utf8) + body)
        let (interim, final) = try client.readResponses()
        #expect(interim.map(\.status) == (minorVersion == 0 ? [] : [104, 100]))
        #expect(final.status == 201)
        let location = try #require(final["location"])
        #expect(location.hasPrefix("/uploads/"), "Location \(location)")
        for response in interim where response.status == 104 { #expect(response["location"] == location) }
        let id = try #require(final["x-server-resource-id"])
        #expect(try receiver.content(of: id) == body)
    }

    @Test func headReportsUploadLength() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request(
            "POST", "/uploads", headers: Self.creationHeaders(version: 8, complete: false, extra: [("Upload-Length", "10")]),
            body: Array("abcd".utf8))
        #expect(created.status == 201)
        let head = try receiver.client().request("HEAD", try Self.path(of: created["location"]))
        #expect(head["upload-length"] == "10")
        #expect(head["upload-offset"] == "4")
        // An append that would end past Upload-Length is refused.
        let tooLong = try receiver.client().request("PATCH", try Self.path(of: created["location"]),
                                                    headers: Self.patchHeaders(version: 8, offset: 4, complete: true),
                                                    body: Array("efghijklmn".utf8))
        #expect(tooLong.status == 400)
    }

    @Test(arguments: versions)
    func wrongOffsetIsAConflict(version: Int) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: Self.creationHeaders(version: version, complete: false),
                                                    body: Array("hello".utf8))
        let path = try Self.path(of: created["location"])
        let conflict = try receiver.client().request("PATCH", path,
                                                     headers: Self.patchHeaders(version: version, offset: 3, complete: true),
                                                     body: Array("lo world".utf8))
        #expect(conflict.status == 409)
        #expect(conflict["upload-offset"] == "5")
        if version >= 6 {
            #expect(conflict["content-type"] == "application/problem+json")
            let problem = try JSONSerialization.jsonObject(with: Data(conflict.body)) as? [String: Any]
            #expect(problem?["type"] as? String == ResumableUpload.mismatchingOffsetProblem)
            #expect(problem?["expected-offset"] as? Int == 5)
            #expect(problem?["provided-offset"] as? Int == 3)
        }
        // The right offset then works.
        let done = try receiver.client().request("PATCH", path, headers: Self.patchHeaders(version: version, offset: 5, complete: true),
                                                 body: Array(" world".utf8))
        #expect(done.status == 201)
        #expect(try receiver.content(of: try #require(done["x-server-resource-id"])) == Array("hello world".utf8))
    }

    @Test(arguments: [(5, 204), (6, 415), (7, 415), (8, 415)])
    func partialUploadMediaTypeFromInterop6(version: Int, expected: Int) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: Self.creationHeaders(version: version, complete: false), body: [])
        let headers = Self.creationHeaders(version: version, complete: false, extra: [("Upload-Offset", "0")])
            + [("Content-Type", "application/octet-stream")]
        let response = try receiver.client().request("PATCH", try Self.path(of: created["location"]), headers: headers,
                                                     body: Array("abc".utf8))
        #expect(response.status == expected)
    }

    @Test(arguments: [3, 6, 8])
    func interruptedAppendKeepsThePrefixAndResumes(version: Int) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(300_000, seed: 11)
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: Self.creationHeaders(version: version, complete: false), body: [])
        let path = try Self.path(of: created["location"])
        do {
            // Announce the whole body, send a third, then stop sending. The receiver closes the
            // connection without a response once it has made the prefix durable.
            let client = try receiver.client()
            var head = "PATCH \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
            for (name, value) in Self.patchHeaders(version: version, offset: 0, complete: true) { head += "\(name): \(value)\r\n" }
            #expect(client.send(Array((head + "\r\n").utf8) + body[0..<100_000]))
            client.finishSending()
            #expect(client.isClosedByServer())
        }
        let probe = try receiver.client().request("HEAD", path, headers: [("Upload-Draft-Interop-Version", String(version))])
        #expect(probe.status == 204)
        let offset = try #require(Int(probe["upload-offset"] ?? ""))
        #expect(offset == 100_000)
        try receiver.completeUpload(path, body: body, from: offset, version: version)
    }

    @Test func interruptedCreationIsResumableFromThe104Location() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(250_000, seed: 5)
        let path: String
        do {
            // Send the head and a part of the body, read the 104, then vanish.
            let client = try receiver.client()
            var head = "POST /uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
            for (name, value) in Self.creationHeaders(version: 6, complete: true) { head += "\(name): \(value)\r\n" }
            client.send(Array((head + "\r\n").utf8) + body[0..<90_000])
            let interim = try client.readNext()
            #expect(interim.status == 104)
            #expect(interim["upload-limit"] != nil)
            path = try Self.path(of: interim["location"])
        }
        let probe = try receiver.client().request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "6")])
        let offset = try #require(Int(probe["upload-offset"] ?? ""))
        #expect(offset == 90_000)
        #expect(probe["upload-length"] == String(body.count))
        try receiver.completeUpload(path, body: body, from: offset, version: 6)
    }

    @Test func newerRequestEndsTheOlderTransfer() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(50_000, seed: 3)
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: Self.creationHeaders(version: 8, complete: false), body: [])
        let path = try Self.path(of: created["location"])
        let older = try receiver.client()
        var head = "PATCH \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\nExpect: 100-continue\r\n"
        for (name, value) in Self.patchHeaders(version: 8, offset: 0, complete: true) { head += "\(name): \(value)\r\n" }
        older.send(Array((head + "\r\n").utf8))
        // The 100 comes once the PATCH holds the upload: from then on it is the older transfer.
        #expect(try older.readNext().status == 100)
        older.send(Array(body[0..<20_000]))
        // The older PATCH stays open; a HEAD ends it and reports a durable offset.
        let probe = try receiver.client().request("HEAD", path)
        let offset = try #require(Int(probe["upload-offset"] ?? ""))
        #expect(offset <= 20_000)
        #expect(older.isClosedByServer())
        try receiver.completeUpload(path, body: body, from: offset, version: 8)
    }

    @Test func deleteCancelsAnUpload() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: Self.creationHeaders(version: 6, complete: false),
                                                    body: Array("partial".utf8))
        let path = try Self.path(of: created["location"])
        #expect(try receiver.client().request("DELETE", path).status == 204)
        #expect(try receiver.client().request("HEAD", path).status == 404)
        #expect(try receiver.client().request("DELETE", path).status == 404)
        #expect(try receiver.client().request("PATCH", path, headers: Self.patchHeaders(version: 6, offset: 7, complete: true),
                                              body: Array("!".utf8)).status == 404)
        #expect(receiver.files(in: "uploads").isEmpty)
    }

    @Test func appendToACompletedUploadIsRefused() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: Self.creationHeaders(version: 8, complete: true),
                                                    body: Array("whole".utf8))
        let response = try receiver.client().request("PATCH", try Self.path(of: created["location"]),
                                                     headers: Self.patchHeaders(version: 8, offset: 5, complete: true),
                                                     body: Array("more".utf8))
        #expect(response.status == 400)
        #expect(response.text.contains("completed-upload"))
        #expect(try receiver.objects().count == 1)
    }
}
