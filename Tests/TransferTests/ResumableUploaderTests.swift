import Testing
@testable import Transfer
import UploadProtocol

@Suite struct ResumableUploaderTests {
    // MARK: Discovery

    @Test(arguments: [
        (FakeResumableServer.Discovery.limits("max-size=1000000000"), true),
        (.limits("min-size=0"), true),
        (.limits("107374182400"), true),  // the article's bare number: the maximum size
        (.missing, false),
        (.status(501), false),
    ])
    func discoveryDecidesResumableOrPlain(discovery: FakeResumableServer.Discovery, resumable: Bool) async throws {
        let fixture = try UploadFixture(size: 10_000, behaviour: .init(discovery: discovery))
        if !resumable {
            // A server without the protocol proves nothing: refused, nothing sent, unless asked for.
            await #expect(throws: TransferError.self) {
                _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
            }
            #expect(fixture.requests("POST").isEmpty)
        }
        let receipt = try await fixture.uploader(acceptUnverified: !resumable).upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.resumable == resumable)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
        let posts = fixture.requests("POST")
        #expect(posts.count == 1)
        let completion = posts.first.flatMap { ResumableUpload.isComplete(headers: $0.headers) }
        #expect(completion == (resumable ? true : nil))
    }

    @Test func discoveryIsCachedPerOrigin() async throws {
        let fixture = try UploadFixture(size: 1000)
        let uploader = fixture.uploader()
        _ = try await uploader.upload(file: fixture.path, metadata: fixture.metadata)
        _ = try await uploader.upload(file: fixture.path, metadata: fixture.metadata)
        #expect(fixture.requests("OPTIONS").count == 1)
        #expect(fixture.requests("POST").count == 2)
    }

    @Test func reachabilityIsAskedOnTheWireEvenWithACachedCapability() async throws {
        let fixture = try UploadFixture(size: 1000)
        let uploader = fixture.uploader()
        _ = try await uploader.upload(file: fixture.path, metadata: fixture.metadata)
        try await uploader.checkReachable()
        try await uploader.checkReachable()
        // One OPTIONS for the upload (then cached), one per reachability check.
        #expect(fixture.requests("OPTIONS").count == 3)
    }

    /// Junk stored first under the same key, when the completing answer is lost: the client finds
    /// the upload complete by HEAD, and the digest that HEAD names must still be its own.
    @Test(arguments: [64 * 1024 as Int64, 1_000])
    func anUploadFoundCompleteAfterALostAnswerIsCheckedToo(optimisticLimit: Int64) async throws {
        let junk = ResumableUpload.reprDigest(sha256: try FileDigest.sha256(bytes: [1, 2, 3]))
        let fixture = try UploadFixture(size: 10_000, behaviour: .init(completionReprDigest: junk, loseCompletionAnswers: 1))
        do {
            _ = try await fixture.uploader(optimisticLimit: optimisticLimit).upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("an upload completed as other content was taken as success")
        } catch {
            #expect(error.code == .badServerResponse, "\(error)")
        }
        #expect(fixture.requests("HEAD").count >= 1, "the client did not ask for the upload's state")
        // Naming this file's digest, the same lost answer is a success found by HEAD.
        let own = ResumableUpload.reprDigest(sha256: try FileDigest.sha256(bytes: fixture.bytes))
        fixture.server.configure { $0.completionReprDigest = own; $0.loseCompletionAnswers = 1 }
        let receipt = try await fixture.uploader(optimisticLimit: optimisticLimit).upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func discoveryCacheEntriesExpire() {
        let cache = DiscoveryCache()
        let start = ContinuousClock.Instant.now
        cache.store(.plain, for: "http://a", lifetime: .seconds(60), now: start)
        #expect(cache.capability(for: "http://a", now: start + .seconds(59)) == .plain)
        #expect(cache.capability(for: "http://b", now: start) == nil)
        #expect(cache.capability(for: "http://a", now: start + .seconds(60)) == nil)
    }

    /// A server that deduped by Idempotency-Key alone acknowledges junk someone
    /// stored under the photo's key; the client must see the stored digest is not its own and
    /// fail (permanent), not report the photo uploaded. Every way an upload can complete is
    /// checked: optimistic creation, appends, a plain upload.
    @Test(arguments: [(64 * 1024 as Int64, FakeResumableServer.Discovery.limits("max-size=1000000000")),
                      (1_000, .limits("max-size=1000000000")), (64 * 1024, .status(501))])
    func anAcknowledgementOfOtherContentFailsTheUpload(optimisticLimit: Int64, discovery: FakeResumableServer.Discovery) async throws {
        let junk = ResumableUpload.reprDigest(sha256: try FileDigest.sha256(bytes: [1, 2, 3]))
        let fixture = try UploadFixture(size: 10_000, behaviour: .init(discovery: discovery, completionReprDigest: junk))
        let plain: Bool
        if case .status = discovery { plain = true } else { plain = false }
        do {
            _ = try await fixture.uploader(optimisticLimit: optimisticLimit, acceptUnverified: plain).upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("an acknowledgement of other content was taken as success")
        } catch {
            #expect(error.code == .badServerResponse)
            #expect(error.classification == .permanent)
        }
        // The same server naming this file's digest (or no digest at all) is success.
        let own = ResumableUpload.reprDigest(sha256: try FileDigest.sha256(bytes: fixture.bytes))
        fixture.server.configure { $0.completionReprDigest = own }
        let receipt = try await fixture.uploader(optimisticLimit: optimisticLimit, acceptUnverified: plain).upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
        #expect(receipt.proof == .verified)
    }

    @Test func unauthorizedDiscoveryIsPermanent() async throws {
        let fixture = try UploadFixture(size: 1000, behaviour: .init(discovery: .status(401)))
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("a 401 was taken as success")
        } catch {
            #expect(error.code == .unauthorized && error.httpStatus == 401 && error.classification == .permanent)
        }
    }

    // MARK: Creation

    @Test func smallFileIsCreatedWholeAndThe104LocationKept() async throws {
        let fixture = try UploadFixture(size: 20_000)
        let log = CheckpointLog(server: fixture.server)
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, checkpoint: log.record)
        #expect(receipt.status == 201)
        #expect(receipt.location == fixture.server.endpoint.replacingOccurrences(of: "/files", with: "/files/u1"))
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST"])
        #expect(receipt.bytesSent == 20_000)
        #expect(receipt.headers["upload-offset"] == "20000")  // names lowercased
        // The 104's upload URL was saved as a checkpoint at offset 0 (a process killed before
        // the 201 resumes there).
        let saved = try #require(log.all.first)
        #expect(saved.checkpoint.offset == 0)
        #expect(saved.checkpoint.location == receipt.location)
    }

    @Test func clientCapturesThe104BeforeTheFinalResponse() async throws {
        let fixture = try UploadFixture(size: 5000)
        let request = HTTPRequest(method: "POST", url: fixture.server.endpoint, headers: [
            ("Upload-Draft-Interop-Version", "6"), ("Upload-Complete", "?1"),
        ], body: .file(path: fixture.path, offset: 0, length: 5000))
        let response = try await HTTPClient().send(request)
        #expect(response.status == 201)
        #expect(response.interimResponses.count == 1)
        #expect(response.interimResponses.first?.status == 104)
        #expect(response.interimResponses.first?.headers["location"] == "/files/u1")
        #expect(response.headers["location"] == "/files/u1")
    }

    @Test func largeFileIsCreatedEmptyAndTheCheckpointSavedBeforeAnyByte() async throws {
        let fixture = try UploadFixture(size: 300_000)
        let log = CheckpointLog(server: fixture.server)
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, checkpoint: log.record)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH"])
        let creation = try #require(fixture.requests("POST").first)
        #expect(creation.bodyBytesReceived == 0)
        #expect(creation.headers["upload-complete"] == "?0")
        #expect(creation.headers["upload-length"] == "300000")
        let first = try #require(log.all.first)
        #expect(first.serverBodyBytes == 0)
        #expect(first.requestsSeen == 2)  // OPTIONS and the empty POST, no PATCH yet
        #expect(first.checkpoint.offset == 0)
        #expect(first.checkpoint.location.hasSuffix("/files/u1"))
        #expect(first.checkpoint.interopVersion == 6)
        let patch = try #require(fixture.requests("PATCH").first)
        #expect(patch.headers["content-type"] == "application/partial-upload")
        #expect(patch.headers["upload-offset"] == "0")
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func noByteIsSentWhenTheCheckpointCannotBeSaved() async throws {
        struct StoreBusy: Error {}
        let fixture = try UploadFixture(size: 300_000)
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata,
                                                    checkpoint: { _ in throw StoreBusy() })
            Issue.record("the upload should have stopped")
        } catch {
            #expect(error.code == .checkpointFailed)
            #expect(error.isTransient)
        }
        #expect(fixture.requests("PATCH").isEmpty)
        #expect(fixture.server.bodyBytesReceived == 0)
    }

    @Test func missingLocationOnCreationIsPermanent() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(omitCreationLocation: true))
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("the upload should have failed")
        } catch {
            #expect(error.code == .badServerResponse)
            #expect(error.classification == .permanent)
        }
        #expect(fixture.requests("PATCH").isEmpty)
    }

    @Test func notFoundOnCreationIsPermanent() async throws {
        let fixture = try UploadFixture(size: 1000, behaviour: .init(creationStatuses: [404]))
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("the upload should have failed")
        } catch {
            #expect(error.code == .notFound)
            #expect(error.classification == .permanent)
        }
    }

    // MARK: Interruption and recovery

    @Test func droppedConnectionMidBodyResumesFromTheServerOffset() async throws {
        let fixture = try UploadFixture(size: 400_000, behaviour: .init(dropAfterBodyBytes: [150_000]))
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "PATCH"])
        #expect(fixture.requests("PATCH").last?.headers["upload-offset"] == "150000")
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
        #expect(fixture.requests("PATCH").last?.headers["content-length"] == "250000")
        // What the first PATCH wrote before the drop (150 000 to 400 000 bytes) plus the 250 000 resent.
        #expect(receipt.bytesSent >= 400_000)
        #expect(receipt.bytesSent <= 650_000)
    }

    /// Every cut that moved the upload on refills the resume budget, so a
    /// link that cuts more often than the budget but always after some progress still gets the
    /// photo through; cuts that gain nothing still end the call after the budget.
    @Test func cutsThatEachMadeProgressNeverExhaustTheResumes() async throws {
        let fixture = try UploadFixture(size: 400_000, behaviour: .init(dropAfterBodyBytes: Array(repeating: 40_000, count: 8)))
        let receipt = try await fixture.uploader(maxResumes: 2).upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
        #expect(fixture.requests("PATCH").count == 9)

        let stuck = try UploadFixture(size: 400_000, behaviour: .init(dropAfterBodyBytes: Array(repeating: 0, count: 8)))
        do {
            _ = try await stuck.uploader(maxResumes: 2).upload(file: stuck.path, metadata: stuck.metadata)
            Issue.record("cuts that gained nothing did not end the call")
        } catch {
            #expect(error.code == .connectionLost)
        }
    }

    @Test func droppedConnectionAfterThe104ResumesFromItsLocation() async throws {
        let fixture = try UploadFixture(size: 50_000, behaviour: .init(dropAfterBodyBytes: [20_000]))
        let log = CheckpointLog(server: fixture.server)
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, checkpoint: log.record)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "HEAD", "PATCH"])
        #expect(log.all.first?.checkpoint.location.hasSuffix("/files/u1") == true)
        #expect(fixture.requests("PATCH").first?.headers["upload-offset"] == "20000")
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func a104WithAnotherVersionIsIgnored() async throws {
        let fixture = try UploadFixture(size: 50_000, behaviour: .init(interimVersionOverride: "99", dropAfterBodyBytes: [20_000]))
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("without a usable 104 there is nothing to resume")
        } catch {
            #expect(error.code == .connectionLost)
            #expect(error.classification == .transient)
        }
        #expect(fixture.requests("HEAD").isEmpty)
    }

    @Test func aNewProcessResumesFromTheSavedCheckpoint() async throws {
        let fixture = try UploadFixture(size: 400_000, behaviour: .init(dropAfterBodyBytes: [100_000]))
        let log = CheckpointLog(server: fixture.server)
        do {
            _ = try await fixture.uploader(maxResumes: 0).upload(file: fixture.path, metadata: fixture.metadata, checkpoint: log.record)
            Issue.record("with no resumes allowed the drop should end the call")
        } catch {
            #expect(error.classification == .transient)
        }
        let saved = try #require(log.all.last?.checkpoint)
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, resumeFrom: saved)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "PATCH"])
        #expect(fixture.requests("PATCH").last?.headers["upload-offset"] == "100000")
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
        #expect(receipt.bytesSent == 300_000)
    }

    @Test func aForgottenUploadStartsOver() async throws {
        let fixture = try UploadFixture(size: 300_000)
        let saved = UploadCheckpoint(location: fixture.server.endpoint + "/gone", offset: 1234, interopVersion: 6)
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, resumeFrom: saved)
        #expect(fixture.server.requests.map(\.method) == ["HEAD", "OPTIONS", "POST", "PATCH"])
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func conflictAsksForTheOffsetAgain() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(patchStatuses: [409]))
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "PATCH"])
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func serverErrorOnAppendIsRecoveredThroughHead() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(patchStatuses: [503]))
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "PATCH"])
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func persistentServerErrorsEndTheCallAsTransient() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(patchStatuses: [503, 503, 503]))
        do {
            _ = try await fixture.uploader(maxResumes: 2).upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("the upload should have failed")
        } catch {
            #expect(error.code == .serverError)
            #expect(error.httpStatus == 503)
            #expect(error.isTransient)
        }
    }

    /// The failure keeps the final response's headers (names lowercased): the agent stores them
    /// on the failed job, where `Retry-After` defers the retry.
    @Test func aFailureKeepsTheResponseHeaders() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(
            patchStatuses: [503, 503, 503], forcedStatusHeaders: [("Retry-After", "60"), ("X-Request-ID", "req-9")]))
        do {
            _ = try await fixture.uploader(maxResumes: 2).upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("the upload should have failed")
        } catch {
            #expect(error.httpStatus == 503)
            #expect(error.responseHeaders["retry-after"] == "60" && error.responseHeaders["x-request-id"] == "req-9")
        }
    }

    @Test func tooLargeAppendsAreShrunk() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(hiddenMaxAppendSize: 80_000))
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
        let accepted = fixture.requests("PATCH").filter { Int($0.headers["content-length"] ?? "") ?? 0 <= 80_000 }
        #expect(accepted.count >= 4)
        #expect(accepted.allSatisfy { $0.headers["upload-complete"] != nil })
    }

    @Test func appendsThatCannotShrinkArePermanent() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(
            hiddenMaxAppendSize: 80_000, creationLimits: "max-size=1000000, min-append-size=200000"))
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
            Issue.record("the upload should have failed")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(error.classification == .permanent)
        }
    }

    @Test func announcedMaxAppendSizeIsObeyed() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(creationLimits: "max-append-size=100000"))
        var reported: [Int64] = []
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata,
                                                          progress: { reported.append($0.acknowledgedBytes) })
        #expect(fixture.requests("PATCH").map { $0.headers["upload-offset"] } == ["0", "100000", "200000"])
        #expect(reported == [100_000, 200_000, 300_000])
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func fileLargerThanTheServerMaximumIsRefusedBeforeSending() async throws {
        let fixture = try UploadFixture(size: 10_000, behaviour: .init(discovery: .limits("max-size=5000")))
        await #expect(throws: TransferError.self) {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        }
        #expect(fixture.server.bodyBytesReceived == 0)
    }

    @Test func cancelDeletesTheUploadResource() async throws {
        let fixture = try UploadFixture(size: 400_000, behaviour: .init(dropAfterBodyBytes: [100_000]))
        let log = CheckpointLog(server: fixture.server)
        let uploader = fixture.uploader(maxResumes: 0)
        _ = try? await uploader.upload(file: fixture.path, metadata: fixture.metadata, checkpoint: log.record)
        let saved = try #require(log.all.last?.checkpoint)
        #expect(fixture.server.uploadBytes(path: "/files/u1")?.count == 100_000)
        try await uploader.cancel(saved)
        #expect(fixture.server.uploadBytes(path: "/files/u1") == nil)
        try await uploader.cancel(saved)  // already gone: 404 also means cancelled
        #expect(fixture.requests("DELETE").count == 2)
    }

    @Test func cancelledTaskStopsWithADeferredError() async throws {
        let fixture = try UploadFixture(size: 300_000)
        let uploader = fixture.uploader()
        let path = fixture.path
        let metadata = fixture.metadata
        let task = Task { () async throws(TransferError) -> UploadReceipt in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await uploader.upload(file: path, metadata: metadata)
        }
        let result = await task.result
        guard case .failure(let failure) = result, let error = failure as? TransferError else {
            Issue.record("a cancelled task should fail with a TransferError")
            return
        }
        #expect(error.code == .cancelled)
        #expect(error.classification == .deferred)
        #expect(fixture.server.bodyBytesReceived == 0)
    }

    // MARK: Interop versions and headers

    @Test(arguments: [3, 5, 6, 8], [10_000, 300_000])
    func everyInteropVersionUploadsSmallAndLargeFiles(version: Int, size: Int) async throws {
        let fixture = try UploadFixture(size: size, behaviour: .init(dropAfterBodyBytes: [size / 3]))
        let receipt = try await fixture.uploader(interopVersion: version).upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
        for request in fixture.server.requests {
            #expect(request.headers["upload-draft-interop-version"] == String(version))
            if version == 3 {
                #expect(request.headers["upload-complete"] == nil)
            } else {
                #expect(request.headers["upload-incomplete"] == nil)
            }
        }
        let creation = try #require(fixture.requests("POST").first)
        if version == 3 {
            #expect(creation.headers["upload-incomplete"] == (size > 64 * 1024 ? "?1" : "?0"))
        }
        for patch in fixture.requests("PATCH") {
            #expect(patch.headers["content-type"] == (version >= 6 ? "application/partial-upload" : nil))
            #expect(patch.headers["upload-offset"] != nil)
        }
    }

    @Test func everyRequestCarriesTheProtocolAndUploadHeaders() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(dropAfterBodyBytes: [100_000], requiredToken: "tok-123"))
        _ = try await fixture.uploader(token: "tok-123\n").upload(file: fixture.path, metadata: fixture.metadata)
        let requests = fixture.server.requests
        #expect(Set(requests.map(\.method)) == ["OPTIONS", "POST", "PATCH", "HEAD"])
        let digest = try #require(Hex.bytes(fromHex: fixture.metadata.sha256Hex))
        for request in requests {
            #expect(request.headers["upload-draft-interop-version"] == "6")
            #expect(request.headers["authorization"] == "Bearer tok-123")
            guard request.method == "POST" || request.method == "PATCH" else { continue }
            #expect(request.headers["idempotency-key"] == fixture.metadata.sha256Hex)
            #expect(request.headers["repr-digest"] == ResumableUpload.reprDigest(sha256: digest))
            #expect(request.headers["content-disposition"] == ResumableUpload.contentDisposition(filename: "IMG 0001 é.jpg"))
            #expect(request.headers["x-verdict"] == fixture.metadata.verdictJSON)
            #expect(request.headers["expect"] == nil)
        }
    }

    @Test(arguments: [
        UploadMetadata(filename: "a.jpg", sha256Hex: "abc", verdictJSON: "{}"),
        UploadMetadata(filename: "a.jpg", sha256Hex: String(repeating: "0", count: 64), verdictJSON: "{\n}"),
        UploadMetadata(filename: "a.jpg", sha256Hex: String(repeating: "0", count: 64), verdictJSON: "{\"a\":1}\r\nX-Evil: 1"),
    ])
    func unusableMetadataIsRefusedBeforeAnyRequest(metadata: UploadMetadata) async throws {
        let fixture = try UploadFixture(size: 100)
        do {
            _ = try await fixture.uploader().upload(file: fixture.path, metadata: metadata)
            Issue.record("the metadata should have been refused")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        #expect(fixture.server.requests.isEmpty)
    }

    /// A file name with a line break cannot inject a header: Content-Disposition
    /// carries it percent-encoded in filename* (and as `_` in the ASCII fallback).
    @Test func aFileNameWithLineBreaksIsSentEncodedNeverAsAHeader() async throws {
        let fixture = try UploadFixture(size: 100, name: "a\r\nX-Evil: 1.jpg")
        _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        let post = try #require(fixture.requests("POST").first)
        #expect(post.headers["x-evil"] == nil)
        let disposition = try #require(post.headers["content-disposition"])
        #expect(ResumableUpload.filename(fromContentDisposition: disposition) == "a\r\nX-Evil: 1.jpg")
        #expect(disposition.contains("filename*=UTF-8''a%0D%0AX-Evil%3A%201.jpg"))
    }
}

@Suite struct ResumableUploaderEdgeTests {
    @Test func connectionsAreReusedAcrossRequests() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(creationLimits: "max-append-size=100000"))
        _ = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        #expect(fixture.server.requests.count == 5)  // OPTIONS, POST, three PATCHes
        // One connection when the machine is quiet; under heavy load an idle connection may be
        // dropped between two requests and redialled, but never one connection per request.
        #expect(fixture.server.connectionsAccepted <= 2)
    }

    @Test func tooLargeOptimisticCreationFallsBackToCarefulCreation() async throws {
        let fixture = try UploadFixture(size: 30_000, behaviour: .init(creationStatuses: [413]))
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "POST", "PATCH"])
        #expect(fixture.requests("POST").last?.headers["upload-complete"] == "?0")
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func serverErrorOnOffsetRetrievalIsRetried() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(dropAfterBodyBytes: [50_000], headStatuses: [503]))
        let receipt = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata)
        #expect(fixture.server.requests.map(\.method) == ["OPTIONS", "POST", "PATCH", "HEAD", "HEAD", "PATCH"])
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == fixture.bytes)
    }

    @Test func resumingAFinishedUploadReturnsItsReceiptWithoutSending() async throws {
        let fixture = try UploadFixture(size: 300_000)
        let log = CheckpointLog(server: fixture.server)
        let first = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, checkpoint: log.record)
        let saved = try #require(log.all.first?.checkpoint)
        let again = try await fixture.uploader().upload(file: fixture.path, metadata: fixture.metadata, resumeFrom: saved)
        #expect(again.serverID == first.serverID)
        #expect(again.bytesSent == 0)
        #expect(fixture.server.requests.map(\.method).suffix(1) == ["HEAD"])
    }

    @Test func cancellingTheTaskAbortsATransferInFlight() async throws {
        let fixture = try UploadFixture(size: 300_000, behaviour: .init(stallMethods: ["PATCH"]))
        let uploader = fixture.uploader()
        let path = fixture.path
        let metadata = fixture.metadata
        let task = Task { try await uploader.upload(file: path, metadata: metadata) }
        // Wait until the PATCH is on the wire and the server is holding it.
        var polls = 0
        while fixture.requests("PATCH").isEmpty && polls < 2000 {
            try await Task.sleep(for: .milliseconds(5))
            polls += 1
        }
        #expect(fixture.requests("PATCH").count == 1)
        task.cancel()
        let result = await task.result
        guard case .failure(let failure) = result, let error = failure as? TransferError else {
            Issue.record("a cancelled transfer should fail with a TransferError")
            return
        }
        #expect(error.code == .cancelled)
        #expect(error.classification == .deferred)
    }

    @Test(arguments: [FakeResumableServer.Discovery.limits("min-size=0"), .status(501)])
    func emptyFilesUpload(discovery: FakeResumableServer.Discovery) async throws {
        let fixture = try UploadFixture(size: 0, behaviour: .init(discovery: discovery))
        let plain: Bool
        if case .status = discovery { plain = true } else { plain = false }
        let receipt = try await fixture.uploader(acceptUnverified: plain).upload(file: fixture.path, metadata: fixture.metadata)
        #expect(receipt.serverID.flatMap { fixture.server.objects[$0] } == [])
        #expect(fixture.requests("POST").first?.headers["content-length"] == "0")
    }

    @Test func aStalledServerIsATransientTimeout() async throws {
        let fixture = try UploadFixture(size: 0, behaviour: .init(stallMethods: ["HEAD"]))
        let client = HTTPClient(options: HTTPClient.Options(stallTimeout: .seconds(1)))
        do {
            _ = try await client.send(HTTPRequest(method: "HEAD", url: fixture.server.endpoint + "/u1"))
            Issue.record("a server that never answers should time out")
        } catch {
            #expect(error.code == .timedOut)
            #expect(error.curlCode == 28)
            #expect(error.isTransient)
        }
    }

    @Test func metadataForAFileNamesAndHashesIt() throws {
        let path = try TemporaryFile.make(bytes: Array("abc".utf8), name: "x.png")
        defer { TemporaryFile.remove(path) }
        let metadata = try UploadMetadata(file: path, verdictJSON: "{}")
        #expect(metadata.filename == "x.png")
        #expect(metadata.sha256Hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
