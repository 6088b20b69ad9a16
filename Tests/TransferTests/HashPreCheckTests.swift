import Testing
@testable import Transfer
import UploadProtocol

/// The hash pre-check asks before sending; a receiver without the lookup (an
/// older one, another server) answers anything but a 200 naming an object, and still gets the file.
@Suite struct HashPreCheckTests {
    static func uploader(_ fixture: UploadFixture) -> ResumableUploader {
        ResumableUploader(configuration: UploadConfiguration(
            endpoint: fixture.server.endpoint, optimisticCreationLimit: 64 * 1024, resumeBackoff: .zero, hashPreCheck: true))
    }

    /// nil: the fake's own answer to an unknown HEAD path (404).
    @Test(arguments: [nil, 404, 405, 501, 200, 401, 503] as [Int?])
    func aReceiverWithoutTheLookupStillGetsTheUpload(lookupStatus: Int?) async throws {
        let fixture = try UploadFixture(size: 20_000, behaviour: .init(headStatuses: lookupStatus.map { [$0] } ?? []))
        let receipt = try await Self.uploader(fixture).upload(file: fixture.path, metadata: fixture.metadata)
        // Discovery first: only a receiver's lookup answer counts.
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "HEAD", "POST"])
        #expect(fixture.requests("HEAD").first?.path == "/files/objects/by-digest/\(fixture.metadata.sha256Hex)")
        #expect(!receipt.alreadyStored)
        #expect(receipt.bytesSent == 20_000)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func anUnreachableReceiverGivesNoPreCheckAnswer() async throws {
        let uploader = ResumableUploader(configuration: UploadConfiguration(
            endpoint: "http://127.0.0.1:9/uploads", maxResumesPerUpload: 0, hashPreCheck: true))
        #expect(await uploader.alreadyStored(sha256Hex: String(repeating: "ab", count: 32)) == nil)
    }

    @Test func resumingSkipsThePreCheck() async throws {
        let fixture = try UploadFixture(size: 300_000)
        let log = CheckpointLog(server: fixture.server)
        let first = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, checkpoint: log.record)
        let saved = try #require(log.all.first?.checkpoint)
        let before = fixture.server.requests.count
        let again = try await Self.uploader(fixture).upload(file: fixture.path, metadata: fixture.metadata, resumeFrom: saved)
        #expect(again.serverID == first.serverID)
        #expect(!fixture.server.requests.dropFirst(before).contains { $0.path.contains("by-digest") })
    }

    @Test(arguments: [
        ("http://h:8080/uploads", "http://h:8080/objects/by-digest/"),
        ("http://h:8080/uploads/", "http://h:8080/objects/by-digest/"),
        ("http://h:8080", "http://h:8080/objects/by-digest/"),
        ("http://h:8080/", "http://h:8080/objects/by-digest/"),
        ("https://h/pd/uploads?x=1#f", "https://h/pd/objects/by-digest/"),
        ("http://h/files", "http://h/files/objects/by-digest/"),
    ])
    func theLookupURLReplacesTheUploadsSegment(endpoint: String, prefix: String) {
        let hex = String(repeating: "0f", count: 32)
        #expect(UploadEndpoint.digestLookup(for: endpoint, sha256Hex: hex.uppercased()) == prefix + hex)
    }
}
