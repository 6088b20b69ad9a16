#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Receiver
import Testing
import UploadProtocol

/// Hostile and broken requests: each gets a 4xx (or 5xx for an unsupported feature) or a closed
/// connection, and the receiver keeps serving.
@Suite struct RobustnessTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let request: String
        let status: Int
        var testDescription: String { name }
    }

    static let uploadHeaders = "Upload-Draft-Interop-Version: 6\r\nContent-Type: application/partial-upload\r\nUpload-Complete: ?1\r\n"

    static let cases: [Case] = [
        Case(name: "garbage", request: "hello there\r\n\r\n", status: 400),
        Case(name: "binary", request: "\u{01}\u{02}\u{03} / HTTP/1.1\r\n\r\n", status: 400),
        Case(name: "missing Host", request: "GET /healthz HTTP/1.1\r\n\r\n", status: 400),
        Case(name: "HTTP/2.0", request: "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", status: 505),
        Case(name: "bare LF", request: "GET /healthz HTTP/1.1\nHost: x\n\n\r\n\r\n", status: 400),
        Case(name: "space before colon", request: "GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n", status: 400),
        Case(name: "folded header", request: "GET /healthz HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", status: 400),
        Case(name: "long request line", request: "GET /" + String(repeating: "a", count: 9_000) + " HTTP/1.1\r\nHost: x\r\n\r\n", status: 414),
        Case(name: "huge headers", request: "GET /healthz HTTP/1.1\r\nHost: x\r\n"
             + String(repeating: "X-Filler: " + String(repeating: "b", count: 1_000) + "\r\n", count: 40) + "\r\n", status: 431),
        Case(name: "too many headers", request: "GET /healthz HTTP/1.1\r\nHost: x\r\n"
             + (0..<150).map { "X-H\($0): v\r\n" }.joined() + "\r\n", status: 431),
        Case(name: "non-numeric Content-Length", request: "POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", status: 400),
        Case(name: "negative Content-Length", request: "POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", status: 400),
        Case(name: "overflowing Content-Length", request: "POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", status: 400),
        Case(name: "conflicting Content-Length", request: "POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", status: 400),
        Case(name: "chunked body", request: "POST /uploads HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", status: 411),
        Case(name: "unknown transfer coding", request: "POST /uploads HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501),
        Case(name: "Content-Length and Transfer-Encoding", request: "POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", status: 400),
        Case(name: "plain upload without length", request: "POST /uploads HTTP/1.1\r\nHost: x\r\n\r\n", status: 411),
        Case(name: "negative offset", request: "PATCH /uploads/0123456789abcdef0123456789abcdef HTTP/1.1\r\nHost: x\r\n"
             + uploadHeaders + "Upload-Offset: -1\r\nContent-Length: 0\r\n\r\n", status: 404),
        Case(name: "dot-dot upload id", request: "PATCH /uploads/../../../etc/passwd HTTP/1.1\r\nHost: x\r\n" + uploadHeaders
             + "Upload-Offset: 0\r\nContent-Length: 4\r\n\r\nroot", status: 404),
        Case(name: "dot-dot object id", request: "GET /objects/../uploads HTTP/1.1\r\nHost: x\r\n\r\n", status: 404),
        Case(name: "encoded dot-dot", request: "DELETE /uploads/%2e%2e%2f%2e%2e HTTP/1.1\r\nHost: x\r\n\r\n", status: 404),
        Case(name: "malformed interop version on creation", request: "POST /uploads HTTP/1.1\r\nHost: x\r\n"
             + "Upload-Draft-Interop-Version: 6\r\nUpload-Complete: yes\r\nContent-Length: 0\r\n\r\n", status: 400),
        Case(name: "unknown method", request: "BREW /uploads HTTP/1.1\r\nHost: x\r\n\r\n", status: 405),
        Case(name: "unknown path", request: "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", status: 404),
        Case(name: "absolute-form target", request: "GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n", status: 400),
        // A few empty lines before the request line are ignored, a flood is refused.
        Case(name: "two leading empty lines", request: "\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", status: 200),
        Case(name: "leading CRLF flood", request: String(repeating: "\r\n", count: 20_000) + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
             status: 400),
    ]

    @Test(arguments: cases)
    func refusedAndStillServing(testCase: Case) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let client = try receiver.client()
        client.send(testCase.request)
        let response = try client.readResponse()
        #expect(response.status == testCase.status)
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
        #expect(try receiver.objects().isEmpty)
        let top = try FileManager.default.contentsOfDirectory(atPath: receiver.directory).sorted()
        #expect(top == ["objects", "tmp", "uploads"])
    }

    /// Upload-Offset values that are not a non-negative sf-integer.
    @Test(arguments: ["-1", "99999999999999999999", "1.5", "abc", ""])
    func badOffsetsOnARealUpload(offset: String) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: ResumableUploadTests.creationHeaders(version: 6, complete: false), body: [])
        let headers = ResumableUploadTests.creationHeaders(version: 6, complete: true, extra: [
            ("Upload-Offset", offset), ("Content-Type", ResumableUpload.partialUploadMediaType),
        ])
        let response = try receiver.client().request("PATCH", try ResumableUploadTests.path(of: created["location"]),
                                                     headers: headers, body: Array("data".utf8))
        #expect(response.status == 400)
        let probe = try receiver.client().request("HEAD", try ResumableUploadTests.path(of: created["location"]))
        #expect(probe["upload-offset"] == "0")
    }

    @Test func keepAliveCarriesSeveralRequests() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let client = try receiver.client()
        for i in 0..<5 {
            let response = try client.request("POST", "/uploads", body: TestReceiver.bytes(1_000 + i, seed: UInt64(i)))
            #expect(response.status == 201)
            #expect(response["connection"] == nil)
        }
        // An early refusal with a small body keeps the connection too (the body is drained).
        #expect(try client.request("PUT", "/objects", body: Array("x".utf8)).status == 404)
        #expect(try client.request("GET", "/healthz").status == 200)
        #expect(try receiver.objects().count == 5)
        let closing = try client.request("GET", "/healthz", headers: [("Connection", "close")])
        #expect(closing["connection"] == "close")
        #expect(client.isClosedByServer())
    }

    /// Every slot busy with a request in progress: a new connection is turned away.
    @Test func connectionsBeyondTheLimitAreTurnedAway() throws {
        let receiver = try TestReceiver { $0.maxConnections = 1 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let holder = try receiver.client()
        // Admitted, and busy: its body is still coming.
        holder.send("POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\nhello")
        usleep(100_000)
        #expect(try receiver.client().readResponse().status == 503)
        holder.send("world")
        #expect(try holder.readResponse().status == 201)
        #expect(holder.isClosedByServer())
    }

    /// Slowloris: connections that send no request head (or only part of one)
    /// held every slot until their idle timeout (60 s), locking real clients out. When the slots
    /// are full, the connection that has waited longest for a head is closed to admit the new one.
    @Test(arguments: [false, true])
    func idleConnectionsMakeRoomForARealClient(partialHeads: Bool) throws {
        let receiver = try TestReceiver { $0.maxConnections = 4 }
        defer { receiver.stop(); receiver.removeDirectory() }
        var idle: [RawHTTPClient] = []
        for _ in 0..<12 {
            let client = try receiver.client()
            if partialHeads { client.send("GET /healthz HTTP/1.1\r\nHost:") }
            idle.append(client)
        }
        usleep(200_000)
        let started = ContinuousClock.now
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
        #expect(ContinuousClock.now - started < .seconds(5))
        withExtendedLifetime(idle) {}
        receiver.stop()  // waits for the connection threads, so every log line is written
        #expect(receiver.log.lines.contains { $0.contains("evicted the connection idle longest") })
    }

    /// Peers without the token sent a POST head announcing a body, were answered
    /// 401 with `Connection: close`, and kept their slots by trickling body bytes: the receiver
    /// went on reading them (lingering for as long as a byte came within every second after a
    /// large body, draining a small one with a 30 s timeout per silence, before even answering),
    /// and an authorised client was turned away (503) meanwhile. Now the 401 goes out at once,
    /// the connection closes after at most a short linger (1 s), and until then it can be evicted.
    @Test(arguments: [100_000_000, 1_000])
    func peersWithoutTheTokenCannotLockAnAuthorisedClientOut(announcedLength: Int) throws {
        let receiver = try TestReceiver { $0.token = "t0k"; $0.maxConnections = 4 }
        defer { receiver.stop(); receiver.removeDirectory() }
        var attackers: [RawHTTPClient] = []
        for _ in 0..<4 {  // every slot
            let attacker = try receiver.client()
            attacker.setReadTimeout(seconds: 3)
            attacker.send("POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: \(announcedLength)\r\n\r\n")
            attackers.append(attacker)
        }
        for attacker in attackers {
            let answer = try attacker.readResponse()
            #expect(answer.status == 401)
            #expect(answer["connection"] == "close")
        }
        // A body byte from each every 0.2 s until the receiver has closed them all (a send fails
        // once the connection is gone), for at most 8 s (the linger is 1 s; slack for a busy machine).
        let descriptors = attackers.map(\.fd)
        let closedAfter = Mutex<[Int32: Duration]>([:])
        let trickleEnded = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        Thread.detachNewThread {
            while ContinuousClock.now - started < .seconds(8) {
                for fd in descriptors where closedAfter.withLock({ $0[fd] == nil }) {
                    var byte: UInt8 = 0x7A
                    if Glibc.send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) != 1 {
                        closedAfter.withLock { $0[fd] = ContinuousClock.now - started }
                    }
                }
                if closedAfter.withLock({ $0.count }) == descriptors.count { break }
                usleep(200_000)
            }
            trickleEnded.signal()
        }
        let client = try receiver.client()
        client.setReadTimeout(seconds: 3)
        let upload = try client.request("POST", "/uploads", headers: [("Authorization", "Bearer t0k")],
                                        body: TestReceiver.bytes(2_000))
        #expect(upload.status == 201, "the authorised client was turned away")
        #expect(ContinuousClock.now - started < .seconds(5))
        trickleEnded.wait()
        withExtendedLifetime(attackers) {}
        let closed = closedAfter.withLock { $0 }
        #expect(closed.count == descriptors.count, "connections still open after 8 s of trickling: \(descriptors.count - closed.count)")
    }

    @Test func slowHeadersAreCutOff() throws {
        let receiver = try TestReceiver { $0.headerTimeout = 0.2 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let client = try receiver.client()
        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")  // and never the empty line
        #expect(try client.readResponse().status == 408)
        #expect(client.isClosedByServer())
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
    }

    @Test func stalledBodyIsTreatedAsInterrupted() throws {
        let receiver = try TestReceiver { $0.ioTimeout = 0.2 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: ResumableUploadTests.creationHeaders(version: 6, complete: false), body: [])
        let path = try ResumableUploadTests.path(of: created["location"])
        let client = try receiver.client()
        var head = "PATCH \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
        for (name, value) in ResumableUploadTests.patchHeaders(version: 6, offset: 0, complete: true) { head += "\(name): \(value)\r\n" }
        client.send(head + "\r\n" + String(repeating: "z", count: 40))
        #expect(client.isClosedByServer())
        #expect(try receiver.client().request("HEAD", path)["upload-offset"] == "40")
    }

    @Test(arguments: ["HEAD", "DELETE"], [("Upload-Offset", "0"), ("Upload-Complete", "?1"), ("Upload-Incomplete", "?0")])
    func retrievalAndCancellationCarryNoUploadFields(method: String, field: (String, String)) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: ResumableUploadTests.creationHeaders(version: 3, complete: false), body: [])
        let path = try ResumableUploadTests.path(of: created["location"])
        #expect(try receiver.client().request(method, path, headers: [field]).status == 400)
        #expect(try receiver.client().request("HEAD", path).status == 204)  // still there
    }

    @Test func parallelUploadsAllArriveIntact() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let port = receiver.port
        let results = Mutex<[Int: String]>([:])
        DispatchQueue.concurrentPerform(iterations: 12) { i in
            let body = TestReceiver.bytes(40_000 + i * 1_000, seed: UInt64(100 + i))
            guard let client = try? RawHTTPClient(port: port) else { return }
            let headers = i.isMultiple(of: 2)
                ? ResumableUploadTests.creationHeaders(version: 3 + i % 6, complete: true)
                : [("Idempotency-Key", "key-\(i)")]
            if let response = try? client.request("POST", "/uploads", headers: headers, body: body),
               let id = response["x-server-resource-id"] {
                results.withLock { $0[i] = id }
            }
        }
        let ids = results.withLock { $0 }
        #expect(ids.count == 12)
        #expect(Set(ids.values).count == 12)
        for (i, id) in ids {
            #expect(try receiver.content(of: id) == TestReceiver.bytes(40_000 + i * 1_000, seed: UInt64(100 + i)))
        }
    }

    /// A large body refused before it is read: the answer still reaches the client.
    @Test func earlyRefusalOfALargeBodyIsReadable() throws {
        let receiver = try TestReceiver { $0.maxSize = 1_000 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let client = try receiver.client()
        client.sendRequest("POST", "/uploads", body: TestReceiver.bytes(3_000_000))
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response["connection"] == "close")
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
    }

    /// A server-side failure answers 500 and closes at once, without waiting for more bytes.
    @Test func unreadableUploadRecordIs500() throws {
        let receiver = try TestReceiver { $0.ioTimeout = 120 }
        defer { receiver.stop(); receiver.removeDirectory() }
        let created = try receiver.client().request("POST", "/uploads",
                                                    headers: ResumableUploadTests.creationHeaders(version: 6, complete: false), body: [])
        let path = try ResumableUploadTests.path(of: created["location"])
        let id = String(path.dropFirst("/uploads/".count))
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: receiver.directory + "/uploads/\(id).json"))
        let client = try receiver.client()
        let response = try client.request("HEAD", path)
        #expect(response.status == 500)
        #expect(client.isClosedByServer())
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
    }

    /// `Expect: 100-continue` (curl sends it for large bodies): 100 before the body when the
    /// request is acceptable, the final answer instead when it is not.
    @Test func expectContinueIsHonoured() throws {
        let receiver = try TestReceiver { $0.token = "t0k" }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(20_000)
        let accepted = try receiver.client()
        accepted.send("PUT /uploads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0k\r\nExpect: 100-continue\r\n"
                      + "Content-Length: \(body.count)\r\n\r\n")
        #expect(try accepted.readNext().status == 100)
        accepted.send(body)
        let stored = try accepted.readNext()
        #expect(stored.status == 201)
        #expect(try receiver.content(of: try #require(stored["x-server-resource-id"])) == body)

        let refused = try receiver.client()
        refused.send("PUT /uploads HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: \(body.count)\r\n\r\n")
        let answer = try refused.readNext()
        #expect(answer.status == 401)
        #expect(answer["connection"] == "close")
        #expect(refused.isClosedByServer())
    }
}
