import Foundation
import Testing
@testable import Transfer

/// A connection that closes inside a response head. libcurl 7.88 reports success for such a HEAD
/// (`curl -I` exits 0 on `HTTP/1.1 204 No Content\r\nUpload-Offset: 7` and a close), so the client
/// itself must notice that the head never ended: a half answer is a lost connection, never an
/// offset or a Location to act on.
@Suite struct TruncatedResponseTests {
    /// Serves one connection: reads the request head, writes `interim` (if any), reads
    /// `bodyBytes` of the body, writes `reply`, closes. Returns the port.
    private static func serveOnce(_ reply: String, interim: String = "", bodyBytes: Int = 0) throws -> UInt16 {
        guard let (listener, port) = TestSocket.listenOnLoopback() else { throw FixtureError.noLoopbackSocket }
        Thread {
            if let connection = listener.accept() {
                var reader = RequestReader(socket: connection)
                _ = reader.readHead()
                if !interim.isEmpty { _ = connection.write(Array(interim.utf8)) }
                var read = 0
                while read < bodyBytes {
                    let chunk = reader.readBody(maxCount: bodyBytes - read)
                    if chunk.isEmpty { break }
                    read += chunk.count
                }
                _ = connection.write(Array(reply.utf8))
                connection.close()
            }
            listener.close()
        }.start()
        return port
    }

    /// Checks that `exchange` ended as a lost connection (transient, so the upload resumes), not
    /// as a response made of whatever arrived before the cut.
    private func expectLostConnection(_ exchange: HTTPExchange, sourceLocation: SourceLocation = #_sourceLocation) {
        switch exchange.result {
        case .success(let response):
            Issue.record("a cut-off reply was taken for a \(response.status) with \(response.headers)", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(error.code == .connectionLost, sourceLocation: sourceLocation)
            #expect(error.isTransient, sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [
        "HTTP/1.1 204 No Content\r\nUpload-Offset: 7",
        "HTTP/1.1 204 No Content\r\nUpload-Offset: 7000\r\n",
        "HTTP/1.1 204 No Content\r\n",
    ])
    func offsetAnswerCutInsideItsHeadIsALostConnection(reply: String) async throws {
        let port = try Self.serveOnce(reply)
        let exchange = await HTTPClient().exchange(HTTPRequest(method: "HEAD", url: "http://127.0.0.1:\(port)/files/u1"))
        expectLostConnection(exchange)
    }

    @Test func completeOffsetAnswerIsStillTaken() async throws {
        let port = try Self.serveOnce("HTTP/1.1 204 No Content\r\nUpload-Offset: 7000\r\nConnection: close\r\n\r\n")
        let response = try await HTTPClient().send(HTTPRequest(method: "HEAD", url: "http://127.0.0.1:\(port)/files/u1"))
        #expect(response.status == 204)
        #expect(response.headers["upload-offset"] == "7000")
    }

    /// The reliability matrix's "final response" faults cut the reply after a whole 104: no final
    /// response ever came, so the connection was lost (transient; the 104's Location resumes it),
    /// not a bad server answer that fails the photo for good.
    @Test(arguments: [
        "",
        "HTTP/1.1 2",
        "HTTP/1.1 201 Created\r\nLocation: /files/u",
    ])
    func connectionClosedAfterAWhole104IsALostConnection(finalPart: String) async throws {
        let interim = "HTTP/1.1 104 Upload Resumption Supported\r\nUpload-Draft-Interop-Version: 6\r\nLocation: /files/u\r\n\r\n"
        // The 104 goes out while the body is still arriving, as the receiver sends it.
        let body = [UInt8](repeating: 7, count: 300_000)
        let port = try Self.serveOnce(finalPart, interim: interim, bodyBytes: body.count)
        let exchange = await HTTPClient().exchange(HTTPRequest(
            method: "POST", url: "http://127.0.0.1:\(port)/files",
            headers: [("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?1")], body: .bytes(body)))
        #expect(exchange.interimResponses.map(\.status) == [104])
        expectLostConnection(exchange)
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
