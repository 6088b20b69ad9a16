import Testing
@testable import Transfer
import UploadProtocol

/// Receivers that try to take more than they should (issue 31): an upload URL on another origin,
/// which would get the photo and the token; a digest lookup that says "I have it" without the
/// server ever answering as a receiver; and the forms of a receiver written from the platform's
/// article, which must be accepted.
@Suite struct HostileReceiverTests {
    // MARK: The article's forms

    /// `Upload-Limit: 107374182400` in discovery and a 104 carrying only `Location`: the upload
    /// is resumable, and a connection cut after the 104 resumes at its Location.
    @Test func aReceiverWrittenFromTheArticleGetsAResumedUpload() async throws {
        let fixture = try UploadFixture(size: 50_000, behaviour: .init(
            discovery: .limits("107374182400"), interimLocationOnly: true, dropAfterBodyBytes: [20_000]))
        let log = CheckpointLog(server: fixture.server)
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, checkpoint: log.record)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "HEAD", "PATCH"])
        #expect(log.all.first?.checkpoint.location.hasSuffix("/files/u1") == true)
        #expect(fixture.requests("PATCH").first?.headers["upload-offset"] == "20000")
        #expect(receipt.resumable)
        #expect(receipt.proof == .verified)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }
}
