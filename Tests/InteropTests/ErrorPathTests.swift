import Foundation
import Receiver
import Testing
import Transfer
import UploadProtocol

/// The answers that are not plain success: a wrong offset (409), a duplicate, a missing or wrong
/// token (401), an upload larger than the receiver takes (413). Each is classed as the retry
/// policy needs, and nothing is stored that should not be.
@Suite struct ErrorPathTests {
    /// The second append's `Upload-Offset` is moved on the way; the receiver answers 409 and the
    /// client asks for the offset again and carries on.
    @Test(arguments: [3, 8], [4096, -4096])
    func wrongOffsetIsAnswered409AndRecovered(interopVersion: Int, skew: Int64) async throws {
        let faults = FaultInjection(cutAtOffsets: [3_000_000])
        let receiver = try LoopbackReceiver { $0.faultInjection = faults }
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: .init(rewrite: { head, ordinal in
            guard head.method == "PATCH", ordinal == 1,
                  let offset = head[ResumableUpload.Header.uploadOffset].flatMap({ Int64($0) }) else { return }
            head[ResumableUpload.Header.uploadOffset] = String(offset + skew)
        }))
        defer { relay.stop() }
        let file = try TestFile(size: 9 << 20, seed: 409)
        let uploader = Interop.uploader(to: relay.uploadURL, interopVersion: interopVersion)

        let receipt = try await uploader.upload(file: file.path, metadata: try file.metadata())

        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        let appends = receiver.requests.filter { $0.method == "PATCH" }.map(\.status)
        #expect(appends.count == 3)
        #expect(appends.dropFirst().first == "409")
        // What the client sent (before the relay's change): the offset the receiver reported, twice.
        let offsets = relay.requests("PATCH").compactMap { $0.head[ResumableUpload.Header.uploadOffset] }
        #expect(offsets == ["0", "3000000", "3000000"])
        #expect(relay.requests("HEAD").count == 2)
    }

    @Test(arguments: [100_000, 6 << 20])
    func duplicateUploadGetsTheSameServerIDAndOneObject(size: Int) async throws {
        let receiver = try LoopbackReceiver()
        let file = try TestFile(size: size, seed: UInt64(size))
        let first = try await Interop.uploader(to: receiver.uploadURL)
            .upload(file: file.path, metadata: try file.metadata())
        // Another uploader (as another process would), another file name, the same content.
        let second = try await Interop.uploader(to: receiver.uploadURL, interopVersion: 8)
            .upload(file: file.path, metadata: try file.metadata(filename: "copy of IMG_0001.jpg"))

        let id = try #require(first.serverID)
        #expect(second.serverID == id)
        #expect(try receiver.objects().map(\.id) == [id])
        #expect(receiver.objectFilesOnDisk() == [id])
        #expect(try receiver.objects().first?.filename == "IMG_0001.jpg")
        #expect(try receiver.holds(object: id, identicalTo: file))
    }

    /// Refused at discovery (resumable) or at the upload itself (through a server without the
    /// protocol): 401 either way, permanent, and nothing is created on the receiver.
    @Test(arguments: [nil, "not-the-token"] as [String?], [false, true])
    func missingOrWrongTokenIs401PermanentAndNothingStored(token: String?, plain: Bool) async throws {
        let receiver = try LoopbackReceiver { $0.token = "interop-token-7f3a" }
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: plain ? .optionsNotImplemented : .init())
        defer { relay.stop() }
        let file = try TestFile(size: 6 << 20, seed: 401)
        let metadata = try file.metadata()

        do {
            _ = try await Interop.uploader(to: relay.uploadURL, token: token, acceptUnverified: plain).upload(file: file.path, metadata: metadata)
            Issue.record("the upload succeeded without the right token")
        } catch {
            #expect(error.code == .unauthorized)
            #expect(error.httpStatus == 401)
            #expect(error.classification == .permanent)
            #expect(!error.description.contains("interop-token-7f3a"))
        }
        #expect(try receiver.objects().isEmpty)
        #expect(receiver.partialUploadSizes().isEmpty)
        #expect(receiver.requests.allSatisfy { $0.status == "401" })

        // The same upload with the right token goes through, so the refusal was the token's doing.
        let receipt = try await Interop.uploader(to: relay.uploadURL, token: "interop-token-7f3a", acceptUnverified: plain)
            .upload(file: file.path, metadata: metadata)
        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
    }

    /// The receiver's `max-size` is announced in discovery, so the client refuses before sending.
    @Test(arguments: [3, 8], [2 << 20, 6 << 20])
    func oversizeAnnouncedInDiscoveryIsRefusedBeforeAnyByte(interopVersion: Int, size: Int) async throws {
        let receiver = try LoopbackReceiver { $0.maxSize = 1 << 20 }
        let relay = try HTTPRelay(targetPort: receiver.port)
        defer { relay.stop() }
        let file = try TestFile(size: size, seed: 413)

        await #expect(throws: TransferError(.tooLarge, "the file is larger than the server's maximum upload size")) {
            _ = try await Interop.uploader(to: relay.uploadURL, interopVersion: interopVersion)
                .upload(file: file.path, metadata: try file.metadata())
        }
        #expect(relay.methods == ["OPTIONS"])
        #expect(relay.bodyBytesForwarded == 0)
        #expect(try receiver.objects().isEmpty)
    }

    /// Where the client could not know the limit (no discovery, or a stale one from before the
    /// receiver's limit changed), the receiver's 413 is a permanent failure and nothing is stored.
    @Test(arguments: [(3, 2 << 20), (3, 6 << 20), (nil, 2 << 20), (nil, 6 << 20), (6, 2 << 20), (6, 6 << 20), (8, 2 << 20), (8, 6 << 20)] as [(Int?, Int)])
    func oversizeRefusedBy413IsPermanent(interopVersion: Int?, size: Int) async throws {
        let file = try TestFile(size: size, seed: 4130)
        let receiver: LoopbackReceiver
        let uploader: ResumableUploader
        let relay: HTTPRelay
        if let interopVersion {
            // Discovery happens while the receiver takes 100 GiB; then it restarts with 1 MiB. The
            // upload goes through an uploader sharing the cached discovery but not the connection,
            // which led to the stopped receiver: reused, it could die under the request (seen once
            // in about ten runs as connection-lost).
            receiver = try LoopbackReceiver()
            relay = try HTTPRelay(targetPort: receiver.port)
            let cache = DiscoveryCache()
            let discovering = Interop.uploader(to: relay.uploadURL, interopVersion: interopVersion, discoveryCache: cache)
            #expect(try await discovering.discover() != .plain)
            try receiver.restart { $0.maxSize = 1 << 20 }
            uploader = Interop.uploader(to: relay.uploadURL, interopVersion: interopVersion, discoveryCache: cache)
        } else {
            receiver = try LoopbackReceiver { $0.maxSize = 1 << 20 }
            relay = try HTTPRelay(targetPort: receiver.port, behaviour: .optionsNotImplemented)
            uploader = Interop.uploader(to: relay.uploadURL, acceptUnverified: true)
        }
        defer { relay.stop() }

        let metadata = try file.metadata()
        do {
            _ = try await uploader.upload(file: file.path, metadata: metadata)
            Issue.record("the oversize upload succeeded")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(error.httpStatus == 413)
            #expect(error.classification == .permanent)
        }
        // The receiver logs a request once it has answered it: the line may come just after the client saw the 413.
        let deadline = ContinuousClock.now + .seconds(5)
        while !receiver.requests.contains(where: { $0.status == "413" }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(receiver.requests.contains { $0.status == "413" })
        #expect(try receiver.objects().isEmpty)
        #expect(receiver.objectFilesOnDisk().isEmpty)
    }
}
