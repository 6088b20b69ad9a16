import Foundation
import Testing
@testable import Transfer

/// A connection that closes inside a response head. libcurl 7.88 reports success for such a HEAD
/// (`curl -I` exits 0 on `HTTP/1.1 204 No Content\r\nUpload-Offset: 7` and a close), so the client
/// itself must notice that the head never ended: a half answer is a lost connection, never an
/// offset or a Location to act on.
@Suite struct TruncatedResponseTests {
    /// Serves one connection: reads the request head, writes `reply`, closes. Returns the port.
    private static func serveOnce(_ reply: String) throws -> UInt16 {
        guard let (listener, port) = TestSocket.listenOnLoopback() else { throw FixtureError.noLoopbackSocket }
        Thread {
            if let connection = listener.accept() {
                var reader = RequestReader(socket: connection)
                _ = reader.readHead()
                _ = connection.write(Array(reply.utf8))
                connection.close()
            }
            listener.close()
        }.start()
        return port
    }

    @Test(arguments: [
        "HTTP/1.1 204 No Content\r\nUpload-Offset: 7",
        "HTTP/1.1 204 No Content\r\nUpload-Offset: 7000\r\n",
        "HTTP/1.1 204 No Content\r\n",
    ])
    func offsetAnswerCutInsideItsHeadIsALostConnection(reply: String) async throws {
        let port = try Self.serveOnce(reply)
        let exchange = await HTTPClient().exchange(HTTPRequest(method: "HEAD", url: "http://127.0.0.1:\(port)/files/u1"))
        switch exchange.result {
        case .success(let response):
            Issue.record("a cut-off head was taken for a \(response.status) with \(response.headers)")
        case .failure(let error):
            #expect(error.code == .connectionLost)
            #expect(error.isTransient)
        }
    }

    @Test func completeOffsetAnswerIsStillTaken() async throws {
        let port = try Self.serveOnce("HTTP/1.1 204 No Content\r\nUpload-Offset: 7000\r\nConnection: close\r\n\r\n")
        let response = try await HTTPClient().send(HTTPRequest(method: "HEAD", url: "http://127.0.0.1:\(port)/files/u1"))
        #expect(response.status == 204)
        #expect(response.headers["upload-offset"] == "7000")
    }

    @Test func interimResponseCutInsideItsHeadIsNotOffered() async throws {
        let port = try Self.serveOnce("HTTP/1.1 104 Upload Resumption Supported\r\nUpload-Draft-Interop-Version: 6\r\nLocation: /files/u")
        let exchange = await HTTPClient().exchange(HTTPRequest(
            method: "POST", url: "http://127.0.0.1:\(port)/files",
            headers: [("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?0")], body: .empty))
        #expect(exchange.interimResponses.isEmpty)
        if case .success(let response) = exchange.result {
            Issue.record("a cut-off interim head ended in a \(response.status)")
        }
    }
}
