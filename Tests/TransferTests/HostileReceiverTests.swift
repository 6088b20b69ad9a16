import Testing
@testable import Transfer
import UploadProtocol

/// Receivers that try to take more than they should (issue 31): an upload URL on another origin,
/// which would get the photo and the token; a digest lookup that says "I have it" without the
/// server ever answering as a receiver; and the forms of a receiver written from the platform's
/// article, which must be accepted.
@Suite struct HostileReceiverTests {
    /// A second listener standing for "another origin": it must never see a request.
    static func otherOrigin() throws -> FakeResumableServer {
        guard let other = FakeResumableServer() else { throw FixtureError.noLoopbackSocket }
        return other
    }

    static func expectCrossOriginRefusal(_ error: TransferError, fixture: UploadFixture, other: FakeResumableServer) {
        #expect(error.code == .notAReceiver, "\(error)")
        #expect(error.classification == .permanent)
        #expect(error.message.contains("http://127.0.0.1:\(fixture.server.port)"), "\(error.message)")
        #expect(error.message.contains("http://127.0.0.1:\(other.port)"), "\(error.message)")
        #expect(other.connectionsAccepted == 0, "the other origin was contacted")
        #expect(other.requests.isEmpty)
    }

    // MARK: The token and the bytes stay on the destination's origin

    /// Every way a server names the upload URL: the careful creation's 201 (a large file), the
    /// optimistic creation's 104 and its final answer (a small file, with and without a 104).
    @Test(arguments: [(300_000, true, "creation answer"), (20_000, true, "104 answer"), (20_000, false, "creation answer")])
    func anUploadURLOnAnotherOriginIsRefusedAndNothingGoesThere(size: Int, sendInterim: Bool, source: String) async throws {
        let other = try Self.otherOrigin()
        defer { other.stop() }
        let fixture = try UploadFixture(size: size, behaviour: .init(
            sendInterim: sendInterim, locationOrigin: "http://127.0.0.1:\(other.port)", omitReprDigest: true))
        let log = CheckpointLog(server: fixture.server)
        do {
            _ = try await fixture.uploader(token: "secret-token").upload(file: fixture.path, metadata: fixture.metadata,
                                                                        checkpoint: log.record)
            Issue.record("an upload URL on another origin was followed")
        } catch {
            Self.expectCrossOriginRefusal(error, fixture: fixture, other: other)
            #expect(error.message.contains("the Location of its \(source)"), "\(error.message)")
        }
        #expect(log.all.isEmpty, "an upload URL on another origin was saved")
        #expect(fixture.requests("PATCH").isEmpty)
    }

    /// The same origin written another way (an explicit default port, upper case) is the same origin.
    @Test(arguments: [
        ("http://h/u/1", "http://h:80/uploads", true),
        ("http://H:80/u/1", "http://h/uploads", true),
        ("https://h/u/1", "https://h:443/uploads", true),
        ("http://h:8080/u/1", "http://h:8080/uploads", true),
        ("http://h:8081/u/1", "http://h:8080/uploads", false),
        ("https://h:8080/u/1", "http://h:8080/uploads", false),
        ("http://other/u/1", "http://h/uploads", false),
        ("http://h.evil/u/1", "http://h/uploads", false),
        ("ftp://h/u/1", "http://h/uploads", false),
    ])
    func originsCompareSchemeHostAndPort(url: String, destination: String, same: Bool) {
        #expect(UploadEndpoint.isSameOrigin(url, as: destination) == same)
    }

    @Test func aSavedUploadOnAnotherOriginIsNeitherResumedNorCancelled() async throws {
        let other = try Self.otherOrigin()
        defer { other.stop() }
        let fixture = try UploadFixture(size: 300_000)
        let saved = UploadCheckpoint(location: "http://127.0.0.1:\(other.port)/files/u1", offset: 100_000, interopVersion: 6)
        let uploader = fixture.uploader(token: "secret-token")
        do {
            _ = try await uploader.upload(file: fixture.path, metadata: fixture.metadata, resumeFrom: saved)
            Issue.record("a saved upload on another origin was resumed")
        } catch {
            Self.expectCrossOriginRefusal(error, fixture: fixture, other: other)
        }
        do {
            try await uploader.cancel(saved)
            Issue.record("a saved upload on another origin was cancelled")
        } catch {
            Self.expectCrossOriginRefusal(error, fixture: fixture, other: other)
        }
    }

    // MARK: The pre-check comes after discovery

    /// A server that does not speak the protocol (no `Upload-Limit`) but answers the digest
    /// lookup 200 with the photo's digest: no receipt comes from the lookup, and the upload is
    /// refused as to a server without the protocol.
    @Test func aDigestLookupCountsOnlyFromADestinationThatAnsweredAsAReceiver() async throws {
        let fixture = try UploadFixture(size: 20_000, behaviour: .init(discovery: .missing, headStatuses: [200]))
        fixture.server.configure {
            $0.forcedHeadHeaders = [("X-Server-Resource-ID", "obj-fake"),
                                    ("Repr-Digest", ResumableUpload.reprDigest(sha256: Hex.bytes(fromHex: fixture.metadata.sha256Hex) ?? []))]
        }
        let uploader = HashPreCheckTests.uploader(fixture)
        #expect(await uploader.alreadyStored(sha256Hex: fixture.metadata.sha256Hex) == nil)
        do {
            let receipt = try await uploader.upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("a lookup answer from a server without the protocol was taken: \(receipt)")
        } catch {
            #expect(error.code == .unverifiedReceipt, "\(error)")
            #expect(error.message.contains("does not speak the resumable-upload protocol"), "\(error.message)")
        }
        #expect(!fixture.server.requests.contains { $0.path.contains("by-digest") }, "the lookup was asked before discovery")
        #expect(fixture.requests("POST").isEmpty)
        // The same lookup answer from a receiver is the pre-check's success.
        fixture.server.configure { $0.discovery = .limits("max-size=1000000000"); $0.headStatuses = [200] }
        let receipt = try await HashPreCheckTests.uploader(fixture).upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.alreadyStored)
        #expect(receipt.serverID == "obj-fake")
    }

    /// `verify` too: a digest lookup answered 200 with the right digest by a server that does not
    /// answer discovery as a receiver proves nothing (and with no object id recorded, nothing can
    /// be checked); from a receiver the same answer is `present`.
    @Test func verifyTakesNoDigestLookupFromAServerThatIsNotAReceiver() async throws {
        let fixture = try UploadFixture(size: 20_000, behaviour: .init(discovery: .missing, headStatuses: [200, 200]))
        fixture.server.configure {
            $0.forcedHeadHeaders = [("X-Server-Resource-ID", "obj-fake"),
                                    ("Repr-Digest", ResumableUpload.reprDigest(sha256: Hex.bytes(fromHex: fixture.metadata.sha256Hex) ?? []))]
        }
        let uploader = HashPreCheckTests.uploader(fixture)
        do {
            let copy = try await uploader.storedCopy(sha256Hex: fixture.metadata.sha256Hex, size: 20_000, serverID: nil)
            Issue.record("verify took a digest lookup from a server that is not a receiver: \(copy)")
        } catch {
            #expect(error.code == .unverifiedReceipt, "\(error)")
            #expect(error.message.contains("does not answer as a resumable-upload receiver"), "\(error.message)")
        }
        #expect(!fixture.server.requests.contains { $0.path.contains("by-digest") }, "the lookup was asked before discovery")
        fixture.server.configure { $0.discovery = .limits("max-size=1000000000"); $0.headStatuses = [200] }
        let receiver = HashPreCheckTests.uploader(fixture)
        #expect(try await receiver.storedCopy(sha256Hex: fixture.metadata.sha256Hex, size: 20_000, serverID: nil) == .present(serverID: "obj-fake"))
    }

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
