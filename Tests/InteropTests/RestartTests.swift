import Foundation
import Receiver
import Testing
import Transfer
import UploadProtocol

/// The receiver goes away in the middle of an append and a new one starts on the same port and
/// directory: the upload carries on from what the first one made durable.
@Suite struct RestartTests {
    @Test(arguments: [3, 8])
    func receiverRestartedMidUploadIsResumedNotStartedOver(interopVersion: Int) async throws {
        let size = 24 << 20
        let holdAt = 10_000_000
        let receiver = try LoopbackReceiver()
        // The relay stops passing bytes at `holdAt` and keeps the client's connection open until
        // released, so the restart happens while the append is in flight, without racing the client.
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: .init(holdAfterBytes: holdAt))
        defer { relay.stop() }
        let file = try TestFile(size: size, seed: 24 + UInt64(interopVersion))
        let uploader = Interop.uploader(to: relay.uploadURL, interopVersion: interopVersion)
        let log = UploadLog()
        let metadata = try file.metadata()
        let path = file.path

        async let upload = uploader.upload(file: path, metadata: metadata, progress: log.progress,
                                           checkpoint: log.checkpoint)

        // Heads are well under 64 KiB, so the receiver holds at least this much of the body.
        let durable = Int64(holdAt - 65_536)
        let held = try await Interop.wait { relay.isHeld && (receiver.partialUploadSizes().first ?? 0) >= durable }
        #expect(held)
        try receiver.restart()
        relay.release()
        let receipt = try await upload

        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        #expect(relay.requests("POST").count == 1)
        let offsets = relay.requests("PATCH").compactMap { $0.head[ResumableUpload.Header.uploadOffset].flatMap { Int64($0) } }
        #expect(offsets.count == 2)
        #expect(offsets.first == 0)
        // The resumed append starts from the first receiver's durable bytes, as the new one reported.
        let resumedAt = try #require(offsets.last)
        #expect(resumedAt >= durable && resumedAt <= Int64(holdAt))
        #expect(log.checkpoints.map(\.offset).contains(resumedAt))
        #expect(Double(relay.bodyBytesForwarded) < 1.1 * Double(size))
        // The new receiver answered the offset retrieval and the rest of the append.
        let afterRestart = receiver.requests.suffix(2)
        #expect(afterRestart.map(\.method) == ["HEAD", "PATCH"])
        #expect(afterRestart.first?.status == "204")
        #expect(afterRestart.last?.status.hasPrefix("2") == true)
    }

    /// A small file goes whole in the creation POST; its upload URL arrives in the 104 while the
    /// body is still going out, and is saved then. A client stopped mid-body (here: its task
    /// cancelled while a relay holds the connection, as a killed process would leave it) is
    /// resumed by a new uploader from that saved URL: HEAD, then only the rest.
    @Test func clientStoppedMidBodyResumesFromThe104Location() async throws {
        let size = 4 << 20
        let holdAt = 2_000_000
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: .init(holdAfterBytes: holdAt))
        defer { relay.stop() }
        let file = try TestFile(size: size, seed: 77)
        let metadata = try file.metadata()
        let path = file.path
        let log = UploadLog()
        // Stall detection far off, so no failure (which would save the 104's URL too) can come
        // before the test stops the client: the checkpoint must come from the 104 itself.
        let first = ResumableUploader(configuration: UploadConfiguration(
            endpoint: relay.uploadURL, http: HTTPClient.Options(stallTimeout: .seconds(600))))
        let stopped = Task { try await first.upload(file: path, metadata: metadata, checkpoint: log.checkpoint) }

        let saved = try await Interop.wait(upTo: 20) { relay.isHeld && !log.checkpoints.isEmpty }
        #expect(saved, "no checkpoint was saved while the body was held")
        stopped.cancel()
        do {
            _ = try await stopped.value
            Issue.record("the stopped upload finished")
        } catch {
            #expect((error as? TransferError)?.code == .cancelled)
        }
        relay.release()
        let checkpoint = try #require(log.checkpoints.first)
        #expect(checkpoint.offset == 0)
        #expect(relay.requests("POST").count == 1)

        let second = Interop.uploader(to: relay.uploadURL)
        let receipt = try await second.upload(file: path, metadata: metadata, resumeFrom: checkpoint)
        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        #expect(relay.requests("POST").count == 1, "the upload was started over")
        #expect(relay.requests("HEAD").count >= 1, "the new uploader did not ask for the offset")
        #expect(receipt.resumedFromOffset != nil, "the receipt does not say the upload was resumed")
        // The rest goes from at least what reached the receiver before the hold, never from 0. (The
        // bytes still in the sockets when the relay let go arrive too; when they were the whole
        // rest, the receiver completed the upload and HEAD says so: nothing is sent again.)
        let resumedAt = relay.requests("PATCH").compactMap { $0.head[ResumableUpload.Header.uploadOffset].flatMap { Int64($0) } }
        // (What was in flight when the client stopped may reach the receiver and be dropped when
        // the new uploader's HEAD ends that transfer, so the bytes forwarded are not bounded here.)
        #expect(resumedAt.allSatisfy { $0 >= Int64(holdAt) - 65_536 && $0 < Int64(size) })
    }
}
