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
}
