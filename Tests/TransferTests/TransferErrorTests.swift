import Testing
import SystemSupport
@testable import Transfer

@Suite struct TransferErrorTests {
    @Test(arguments: [
        (408, TransferError.Code.requestTimeout, TransferError.Classification.transient),
        (429, .rateLimited, .transient),
        (500, .serverError, .transient),
        (502, .serverError, .transient),
        (503, .serverError, .transient),
        (504, .serverError, .transient),
        (400, .rejected, .permanent),
        (401, .unauthorized, .permanent),
        (403, .unauthorized, .permanent),
        (405, .rejected, .permanent),
        (409, .rejected, .permanent),
        (413, .tooLarge, .permanent),
        (415, .rejected, .permanent),
        (308, .rejected, .permanent),
    ])
    func httpStatuses(status: Int, code: TransferError.Code, classification: TransferError.Classification) {
        let error = TransferError.forStatus(status)
        #expect(error.code == code)
        #expect(error.classification == classification)
        #expect(error.httpStatus == status)
        #expect(error.description.hasPrefix("transfer/\(code.rawValue) http \(status): "))
    }

    /// A message that quotes a server cannot drive a terminal: its control characters are
    /// escaped where the error is made, whichever way the server's text came in.
    @Test func serverTextInAMessageHasItsControlCharactersEscaped() throws {
        let hostile = "\u{1B}]0;owned\u{07}\u{1B}[2J"
        #expect(TransferError(.rejected, "the server said \(hostile)").message == "the server said \\x1b]0;owned\\x07\\x1b[2J")
        #expect(TransferError(.rejected, "plain words, é").message == "plain words, é")
        let redirect = try #require(ReceiverAnswer.webPageError(
            HTTPResponse(status: 302, headers: ["location": "http://portal.example/\(hostile)"]), url: "http://receiver.example/uploads"))
        #expect(!redirect.message.unicodeScalars.contains(where: TerminalText.isControl), "\(redirect.message)")
    }

    @Test func notFoundIsPermanentOnCreationAndRejectedElsewhere() {
        #expect(TransferError.forStatus(404, creation: true).code == .notFound)
        #expect(TransferError.forStatus(404, creation: true).classification == .permanent)
        #expect(TransferError.forStatus(404).code == .rejected)
    }

    /// libcurl result codes by their stable numbers (curl.h).
    @Test(arguments: [
        (UInt32(6), TransferError.Code.hostNotFound, TransferError.Classification.transient),  // COULDNT_RESOLVE_HOST
        (5, .hostNotFound, .transient),          // COULDNT_RESOLVE_PROXY
        (7, .connectionFailed, .transient),      // COULDNT_CONNECT
        (28, .timedOut, .transient),             // OPERATION_TIMEDOUT (also the low-speed stall)
        (52, .connectionLost, .transient),       // GOT_NOTHING
        (55, .connectionLost, .transient),       // SEND_ERROR
        (56, .connectionLost, .transient),       // RECV_ERROR
        (18, .connectionLost, .transient),       // PARTIAL_FILE
        (35, .tlsFailure, .transient),           // SSL_CONNECT_ERROR
        (60, .tlsFailure, .permanent),           // PEER_FAILED_VERIFICATION
        (8, .badServerResponse, .transient),     // WEIRD_SERVER_REPLY
        (26, .fileUnreadable, .permanent),       // READ_ERROR
        (42, .cancelled, .deferred),             // ABORTED_BY_CALLBACK
        (3, .invalidRequest, .permanent),        // URL_MALFORMAT
        (1, .invalidRequest, .permanent),        // UNSUPPORTED_PROTOCOL
        (23, .transportFailure, .transient),     // WRITE_ERROR
    ])
    func curlCodes(raw: UInt32, code: TransferError.Code, classification: TransferError.Classification) {
        let error = CurlEasy.transferError(forCode: raw)
        #expect(error.code == code)
        #expect(error.classification == classification)
        #expect(error.httpStatus == nil)
        #expect(error.curlCode == Int(raw))
        #expect(error.description.hasPrefix("transfer/\(code.rawValue) curl \(raw): "))
    }

    @Test func abortsByTheReadCallbackAreFileErrors() {
        #expect(CurlEasy.transferError(forCode: 42, fileFailed: true).code == .fileUnreadable)
        #expect(CurlEasy.transferError(forCode: 23, headersOverflowed: true).code == .badServerResponse)
    }

    @Test func refusedConnectionIsTransient() async throws {
        let port = try #require(TestSocket.unusedLoopbackPort())
        do {
            _ = try await HTTPClient().send(HTTPRequest(method: "OPTIONS", url: "http://127.0.0.1:\(port)/files"))
            Issue.record("nothing listens on the port")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect(error.isTransient)
        }
    }

    @Test func nonHTTPDestinationsAreRefused() async {
        await #expect(throws: TransferError.self) {
            _ = try await ResumableUploader(configuration: UploadConfiguration(endpoint: "file:///etc/passwd")).discover()
        }
        await #expect(throws: TransferError.self) {
            _ = try await ResumableUploader(configuration: UploadConfiguration(endpoint: "http://127.0.0.1:1/x", interopVersion: 9)).discover()
        }
    }

    @Test func theTokenNeverAppearsInErrorsOrDescriptions() async throws {
        let secret = "sk-live-0123456789-SECRET"
        var texts: [String] = []
        func collect(_ error: TransferError) {
            texts += [error.description, error.message, String(reflecting: error), "\(error)"]
        }

        // 401 from a server that wants another token; 503s until the budget runs out; bodies
        // dropped before any byte arrived, with no resumes left (a drop after progress refills
        // the budget); a creation without Location; a refused connection.
        let scenarios: [FakeResumableServer.Behaviour] = [
            .init(requiredToken: "another-token"),
            .init(patchStatuses: [503, 503, 503]),
            .init(dropAfterBodyBytes: [0, 0, 0]),
            .init(omitCreationLocation: true),
            .init(discovery: .status(403)),
        ]
        for behaviour in scenarios {
            let fixture = try UploadFixture(size: 300_000, behaviour: behaviour)
            let uploader = fixture.uploader(token: secret, maxResumes: 1)
            texts += [String(reflecting: uploader.configuration), "\(uploader.configuration)"]
            do {
                _ = try await uploader.upload(file: fixture.path, metadata: fixture.metadata)
                Issue.record("scenario should fail: \(behaviour)")
            } catch {
                collect(error)
            }
            #expect(fixture.server.requests.allSatisfy { $0.headers["authorization"] == "Bearer \(secret)" })
        }
        let port = try #require(TestSocket.unusedLoopbackPort())
        let refused = ResumableUploader(configuration: UploadConfiguration(
            endpoint: "http://127.0.0.1:\(port)/files", token: BearerToken(secret), resumeBackoff: .zero))
        do {
            _ = try await refused.discover()
        } catch {
            collect(error)
        }
        #expect(texts.count >= 20)
        for text in texts {
            #expect(!text.contains(secret))
            #expect(!text.contains("SECRET"))
        }
        #expect(String(describing: BearerToken(secret)) == "Optional(BearerToken(redacted))")
    }

    @Test func tokensAreTrimmedAndValidated() {
        #expect(BearerToken("abc\n")?.headerValue == "Bearer abc")
        #expect(BearerToken("  \n") == nil)
        #expect(BearerToken("a b") == nil)
        #expect(BearerToken("a\r\nX-Evil: 1") == nil)
    }

    /// A 403 problem names the scope the token lacks: its `detail` in the message, escaped; it is
    /// still `unauthorized`, the refusal that charges nothing. Without a problem body, as before.
    @Test func aScopeRefusalNamesTheScopeNeeded() {
        let problem = Array(#"{"detail":"this request needs a token with the read scope; the token of device anna-phone\u001b[31m has the upload scope","scope":"read","status":403,"title":"the token's scope does not allow this request","type":"tag:photodrain.invalid,2026:insufficient-scope"}"#.utf8)
        let error = TransferError.forStatus(403, headers: ["content-type": "application/problem+json"], body: problem)
        #expect(error.code == .unauthorized)
        #expect(!error.isTransient)
        #expect(error.httpStatus == 403)
        #expect(error.message.hasPrefix("the server refused the token: this request needs a token with the read scope"), "\(error.message)")
        #expect(error.message.contains("anna-phone\\x1b[31m has"), "\(error.message)")
        #expect(!error.message.contains("\u{1b}"))
        let full = TransferError.forStatus(507, headers: ["content-type": "application/problem+json"],
                                           body: Array(#"{"detail":"account anna holds 30000 bytes of its 50000-byte quota","type":"tag:photodrain.invalid,2026:quota-exceeded"}"#.utf8))
        #expect(full.code == .quotaExceeded && !full.isTransient && full.message.contains("50000-byte quota"), "\(full)")
        // A full disk's 507 (no problem) stays a server error, retried.
        #expect(TransferError.forStatus(507, headers: ["content-type": "text/plain"], body: Array("insufficient storage".utf8)).code == .serverError)
        let plain = TransferError.forStatus(403, headers: ["content-type": "text/plain"], body: Array("no".utf8))
        #expect(plain.message == "the server refused the credentials")
        #expect(TransferError.forStatus(401, headers: ["content-type": "application/problem+json"], body: problem).message
                == "the server refused the credentials")
    }

    /// `photodrain serve`'s 429 for an address that failed to authenticate too often answers a
    /// token that is not valid: a refusal, as the 401s before it, not a slow-down to retry. Any
    /// other 429 stays `rateLimited`, retried.
    @Test func aRefusalForTooManyFailedAuthenticationsIsARefusalOfTheToken() {
        let body = Array(#"{"detail":"this address sent 20 requests without a valid bearer token in a short time; requests without one are refused for 3 s","limit":20,"status":429,"title":"too many failed authentications from this address","type":"tag:photodrain.invalid,2026:too-many-failed-authentications","window":60}"#.utf8)
        let error = TransferError.forStatus(429, headers: ["content-type": "application/problem+json", "retry-after": "3"], body: body)
        #expect(error.code == .unauthorized && !error.isTransient && error.httpStatus == 429, "\(error)")
        #expect(error.message.hasPrefix("the server refused the token: this address sent 20 requests"), "\(error.message)")
        let uploads = Array(#"{"detail":"this token has 8 upload requests in progress","status":429,"type":"tag:photodrain.invalid,2026:too-many-uploads"}"#.utf8)
        #expect(TransferError.forStatus(429, headers: ["content-type": "application/problem+json"], body: uploads).code == .rateLimited)
        #expect(TransferError.forStatus(429).code == .rateLimited)
    }
}
