import Testing
@testable import Transfer
import UploadProtocol

/// A photo counts as uploaded only when the destination has shown it holds exactly
/// those bytes. Each case is a way a destination can say "OK" without holding the photo.
@Suite struct ProofOfReceiptTests {
    /// A captive portal answers every request 200 with an HTML page: that is no receiver, nothing
    /// is sent, and the error names the likely cause.
    @Test func aCaptivePortalIsNotAReceiver() async throws {
        let fixture = try UploadFixture(size: 10_000, behaviour: .init(discovery: .webPage))
        do {
            _ = try await fixture.uploader(acceptUnverified: true).upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("a web page's 200 was taken as an upload receiver")
        } catch {
            #expect(error.code == .notAReceiver)
            #expect(error.message.contains("captive portal or a wrong URL"))
        }
        #expect(fixture.requests("POST").isEmpty, "bytes were sent to a web page")
    }

    @Test func webPagesAndRedirectsAreRecognised() {
        let html = HTTPResponse(status: 200, headers: ["content-type": "text/html"], body: Array("<html></html>".utf8))
        #expect(ReceiverAnswer.webPageError(html, url: "http://h/uploads")?.code == .notAReceiver)
        let sniffed = HTTPResponse(status: 201, headers: [:], body: Array("\n  <!DOCTYPE HTML><html>".utf8))
        #expect(ReceiverAnswer.webPageError(sniffed, url: "http://h/uploads") != nil)
        let redirect = HTTPResponse(status: 302, headers: ["location": "http://portal/login?session=secret"])
        let error = ReceiverAnswer.webPageError(redirect, url: "http://h/uploads?token=secret")
        #expect(error?.code == .notAReceiver)
        #expect(error?.message.contains("secret") == false, "a query was shown: \(error?.message ?? "")")
        // A receiver's own answer, even with an HTML error body, is not a web page.
        let receiver = HTTPResponse(status: 201, headers: ["content-type": "text/html", "upload-offset": "10"], body: Array("<html>".utf8))
        #expect(ReceiverAnswer.webPageError(receiver, url: "http://h/uploads") == nil)
        #expect(ReceiverAnswer.webPageError(HTTPResponse(status: 204, headers: [:]), url: "http://h/uploads") == nil)
    }

    /// A 201 that says `Upload-Complete: ?0` and `Upload-Offset: 0` is no receipt, however the
    /// upload was created (whole file at once, or empty and then appended).
    @Test(arguments: [64 * 1024 as Int64, 1_000])
    func aCompletionThatSaysIncompleteIsNotUploaded(optimisticLimit: Int64) async throws {
        let fixture = try UploadFixture(size: 10_000, behaviour: .init(lieIncomplete: true))
        do {
            let receipt = try await fixture.uploader(optimisticLimit: optimisticLimit)
                .upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("an upload the server called incomplete was taken as done: \(receipt)")
        } catch {
            #expect(error.code == .unverifiedReceipt, "\(error)")
        }
        #expect(fixture.server.objects.isEmpty)
    }

    /// No digest anywhere (the answer, the upload resource, a digest lookup): not uploaded,
    /// unless the caller accepts unverified receipts, and then the receipt says so.
    @Test(arguments: [64 * 1024 as Int64, 1_000])
    func noDigestIsNoProof(optimisticLimit: Int64) async throws {
        let fixture = try UploadFixture(size: 10_000, behaviour: .init(omitReprDigest: true))
        do {
            _ = try await fixture.uploader(optimisticLimit: optimisticLimit).upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("an upload without proof of receipt was taken as verified")
        } catch {
            #expect(error.code == .unverifiedReceipt)
            #expect(error.message.contains("--accept-unverified"))
        }
        let receipt = try await fixture.uploader(optimisticLimit: optimisticLimit, acceptUnverified: true)
            .upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.proof == .unverified)
        // The upload resource's HEAD is asked for the digest before giving up.
        #expect(!fixture.requests("HEAD").isEmpty)
    }

    /// With the digest in the final answer, the receipt is verified.
    @Test func aDigestOfTheStoredBytesIsProof() async throws {
        let fixture = try UploadFixture(size: 10_000)
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.proof == .verified)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    /// A plain server (no resumable protocol) is refused before any byte goes, with the flag named.
    @Test func aPlainServerIsRefusedWithoutTheOptIn() async throws {
        let fixture = try UploadFixture(size: 10_000, behaviour: .init(discovery: .missing, omitReprDigest: true))
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("a plain upload was made without --accept-unverified")
        } catch {
            #expect(error.code == .unverifiedReceipt)
            #expect(error.message.contains("--accept-unverified"))
        }
        #expect(fixture.server.bodyBytesReceived == 0)
        let receipt = try await fixture.uploader(acceptUnverified: true).upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.proof == .unverified)
        #expect(receipt.resumable == false)
    }
}

/// A failure keeps every header of the server's answer, as a success does.
@Suite struct FailureHeadersTests {
    @Test func aRefusedDiscoveryKeepsTheServersHeaders() async throws {
        let fixture = try UploadFixture(size: 1000, behaviour: .init(
            discovery: .status(503), forcedStatusHeaders: [("X-Request-Id", "req-42"), ("Retry-After", "7")]))
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("a 503 was taken as success")
        } catch {
            #expect(error.responseHeaders["x-request-id"] == "req-42")
            #expect(error.responseHeaders["retry-after"] == "7")
        }
    }
}
