import Foundation
import Receiver
import Testing
import UploadProtocol

/// Failed authentications per peer address (`ReceiverConfiguration.failedAuthLimit`): past the
/// limit an address's requests without a valid token get `429`, its requests with a valid token
/// are served, other addresses are untouched, and the count decays on the receiver's clock.
@Suite struct FailedAuthLimitTests {
    typealias Family = AccessTableTests.Family

    static let wrong = [("Authorization", "Bearer pd_" + String(repeating: "0", count: 64))]

    @Test func pastTheLimitAnAddressWithoutAValidTokenGets429AndAValidTokenFromItIsServed() throws {
        let family = try Family { $0.failedAuthLimit = 5; $0.failedAuthWindow = 60 }
        let receiver = family.receiver
        defer { receiver.stop(); receiver.removeDirectory() }

        // Five failures, with a wrong token or none: each a 401, closed.
        for attempt in 0..<5 {
            let client = try receiver.client()
            let answer = try client.request("OPTIONS", "/uploads", headers: attempt % 2 == 0 ? Self.wrong : [])
            #expect(answer.status == 401, "attempt \(attempt): \(answer.status)")
            #expect(answer["connection"] == "close")
        }
        // The sixth: 429 at once, a problem body, Retry-After for one failure's decay (60 s / 5),
        // closed without waiting for the 100 MB body its head announces (the lockout fixes hold).
        let refused = try receiver.client()
        refused.setReadTimeout(seconds: 3)
        refused.send("POST /uploads HTTP/1.1\r\nHost: x\r\nAuthorization: \(Self.wrong[0].1)\r\nContent-Length: 100000000\r\n\r\n")
        let answer = try refused.readResponse()
        #expect(answer.status == 429)
        #expect(answer["retry-after"] == "12")
        #expect(answer["connection"] == "close")
        #expect(answer["content-type"] == "application/problem+json")
        let problem = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        #expect(problem["type"] as? String == ResumableUpload.tooManyFailedAuthenticationsProblem)
        #expect(problem["status"] as? Int == 429)
        #expect(problem["limit"] as? Int == 5 && problem["window"] as? Int == 60)
        #expect((problem["detail"] as? String)?.contains("refused for 12 s") == true, "\(problem)")
        #expect(refused.isClosedByServer())
        #expect(try receiver.client().request("GET", "/objects").status == 429, "no token at all is refused alike")

        // The same address with valid tokens: served as ever, every scope.
        #expect(try receiver.client().request("POST", "/uploads", headers: family.phone.authorization, body: TestReceiver.bytes(2_000)).status == 201)
        #expect(try receiver.client().request("GET", "/objects", headers: family.laptop.authorization).status == 200)
        #expect(try receiver.client().request("OPTIONS", "/uploads", headers: family.admin.authorization).status == 200)
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
        // Another address is not this one: its failures are its own.
        #expect(try receiver.client(from: "127.0.0.2").request("OPTIONS", "/uploads", headers: Self.wrong).status == 401)

        // The count decays on the receiver's clock: one failure forgiven every 12 s.
        receiver.clock.advance(by: 11)
        let still = try receiver.client().request("OPTIONS", "/uploads", headers: Self.wrong)
        #expect(still.status == 429 && still["retry-after"] == "1", "\(still.status) \(still["retry-after"] ?? "-")")
        receiver.clock.advance(by: 1)
        #expect(try receiver.client().request("OPTIONS", "/uploads", headers: Self.wrong).status == 401)
        #expect(try receiver.client().request("OPTIONS", "/uploads", headers: Self.wrong).status == 429)
        receiver.clock.advance(by: 60)
        for _ in 0..<5 { #expect(try receiver.client().request("OPTIONS", "/uploads", headers: Self.wrong).status == 401) }
        #expect(try receiver.client().request("OPTIONS", "/uploads", headers: Self.wrong).status == 429)

        // The log says which address reached the limit and which requests it refused; no token.
        // (Stopped first: the refused POST's line is written once its linger has ended.)
        receiver.stop()
        let lines = receiver.log.lines
        #expect(lines.contains { $0.contains("401 unauthorized peer=127.0.0.1 failed-authentication-limit-reached") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("POST /uploads 429 unauthorized too-many-failed-authentications peer=127.0.0.1") }, "\(lines.joined(separator: "\n"))")
        for token in [Self.wrong[0].1, family.phone.token, family.laptop.token, family.admin.token] {
            #expect(!lines.contains { $0.contains(token) })
        }
    }

    /// A peer being refused 429 holds no slot an authorised client needs: with every slot taken
    /// by refused peers announcing large bodies, an authorised upload from the same address is
    /// still served on its first try.
    @Test func refusedPeersCannotLockAnAuthorisedClientOut() throws {
        let family = try Family { $0.failedAuthLimit = 1; $0.maxConnections = 4 }
        let receiver = family.receiver
        defer { receiver.stop(); receiver.removeDirectory() }
        #expect(try receiver.client().request("OPTIONS", "/uploads", headers: Self.wrong).status == 401)
        var refused: [RawHTTPClient] = []
        for _ in 0..<4 {
            let peer = try receiver.client()
            peer.setReadTimeout(seconds: 3)
            peer.send("POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
            refused.append(peer)
        }
        for peer in refused {
            #expect(try peer.readResponse().status == 429)
        }
        let client = try receiver.client()
        client.setReadTimeout(seconds: 3)
        #expect(try client.request("POST", "/uploads", headers: family.phone.authorization, body: TestReceiver.bytes(2_000)).status == 201)
        withExtendedLifetime(refused) {}
    }
}
