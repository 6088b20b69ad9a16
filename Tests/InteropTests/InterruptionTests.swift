import FaultProxy
import Foundation
import Receiver
import Testing
import Transfer
import UploadProtocol

/// Connections cut mid-upload, by a proxy on the way (either direction) or by the receiver itself:
/// the client asks the receiver for its offset and sends only the rest.
@Suite struct InterruptionTests {
    /// client -> FaultProxy (cuts) -> HTTPRelay (counts what reaches the receiver) -> receiver.
    /// Connection 0 carries discovery, creation and the first append; each later connection
    /// carries an offset retrieval and the next append.
    @Test(arguments: [3, 6, 8])
    func fiftyMegabytesCutByTheNetworkResumeFromTheReceiversOffset(interopVersion: Int) async throws {
        let size = 50_000_000
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port)
        defer { relay.stop() }
        let plan = FaultPlan { connection in
            switch connection {
            case 0: .cut(afterBytes: 7_000_000, direction: .upstream)
            case 1: .cut(afterBytes: 40, direction: .downstream)  // the offset answer itself is lost
            case 2: .cut(afterBytes: 15_000_000, direction: .upstream)
            case 3: .cut(afterBytes: 9_000_123, direction: .upstream)
            default: nil
            }
        }
        let proxy = try FaultProxy(targetPort: relay.port, plan: plan)
        defer { proxy.stop() }
        let file = try TestFile(size: size, seed: UInt64(interopVersion))
        // The client's default pause before resuming (250 ms, growing), as in production.
        let uploader = Interop.uploader(to: "http://127.0.0.1:\(proxy.port)/uploads", interopVersion: interopVersion,
                                        resumeBackoff: UploadConfiguration(endpoint: relay.uploadURL).resumeBackoff)
        let log = UploadLog()

        let receipt = try await uploader.upload(file: file.path, metadata: try file.metadata(),
                                                progress: log.progress, checkpoint: log.checkpoint)

        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        #expect(proxy.connectionCount >= 5)
        // Created once, never started over.
        #expect(relay.requests("POST").count == 1)
        // Each append after a cut starts at the offset the receiver reported (the checkpoint saved
        // after the HEAD), further on every time, and never beyond the bytes that reached it. (It
        // may start before them: bytes still in the receiver's socket buffer when the client's
        // HEAD ends the broken transfer are dropped, as the protocol has it.)
        let appends = relay.requests("PATCH")
        let offsets = appends.compactMap { $0.head[ResumableUpload.Header.uploadOffset].flatMap { Int64($0) } }
        #expect(offsets.count == 4)
        #expect(offsets.first == 0)
        #expect(zip(offsets, offsets.dropFirst()).allSatisfy { $0 < $1 })
        #expect(zip(offsets, appends).allSatisfy { $0 <= $1.bodyBytesBefore })
        #expect(Set(offsets.dropFirst()).isSubset(of: Set(log.checkpoints.map(\.offset))))
        // What reached the receiver in total, against the file size.
        let received = relay.bodyBytesForwarded
        #expect(received >= Int64(size))
        #expect(Double(received) < 1.1 * Double(size))
        // The client's own count includes what died in socket buffers at each cut.
        #expect(receipt.bytesSent >= received)
        // Progress only ever reports offsets the receiver acknowledged, and never goes back.
        #expect(log.acknowledged == log.acknowledged.sorted())
        #expect(log.acknowledged.last == Int64(size))
        #expect(Set(log.checkpoints.map(\.location)).count == 1)
    }

    /// The receiver drops the connection when the body reaches each offset, keeping the bytes
    /// before it: the appends that follow start exactly there.
    @Test(arguments: [3, 5, 6, 8], [3_000_000, 12_000_000])
    func receiverCutsAtOffsetsAreResumedExactlyThere(interopVersion: Int, size: Int) async throws {
        let cuts: [Int64] = size == 3_000_000 ? [0, 1, 1_048_576, 2_999_999] : [0, 65_536, 5_000_000, 11_999_999]
        let faults = FaultInjection(cutAtOffsets: cuts)
        let receiver = try LoopbackReceiver { $0.faultInjection = faults }
        let relay = try HTTPRelay(targetPort: receiver.port)
        defer { relay.stop() }
        let file = try TestFile(size: size, seed: UInt64(size / 1000 + interopVersion))
        let uploader = Interop.uploader(to: relay.uploadURL, interopVersion: interopVersion)

        let receipt = try await uploader.upload(file: file.path, metadata: try file.metadata())

        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        #expect(faults.firedCount == cuts.count)
        #expect(relay.requests("POST").count == 1)
        let offsets = relay.requests("PATCH").compactMap { $0.head[ResumableUpload.Header.uploadOffset].flatMap { Int64($0) } }
        if Int64(size) <= Interop.optimisticLimit {
            // The whole body went with the creation (cut at the first offset); the 104 gave the URL.
            #expect(offsets == cuts)
        } else {
            #expect(offsets == [0] + cuts)
        }
        // Before each resumed append the client asked for the offset.
        #expect(relay.requests("HEAD").count == cuts.count)
    }

    /// A plain upload cannot resume: after a cut the whole body goes again, either at once (libcurl
    /// re-sends a request from its start when a reused connection breaks, which depends on when
    /// it notices) or in the next call after a transient failure. Nothing partial is ever stored.
    @Test func plainUploadCutIsSentWholeAgainAndStoredOnce() async throws {
        let faults = FaultInjection(cutAtOffsets: [1_000_000])
        let receiver = try LoopbackReceiver { $0.faultInjection = faults }
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: .optionsNotImplemented)
        defer { relay.stop() }
        let file = try TestFile(size: 3_000_000, seed: 9)
        let uploader = Interop.uploader(to: relay.uploadURL, acceptUnverified: true)
        let metadata = try file.metadata()

        var failures: [TransferError] = []
        var receipt: UploadReceipt?
        for _ in 0..<3 where receipt == nil {
            do {
                receipt = try await uploader.upload(file: file.path, metadata: metadata)
            } catch {
                failures.append(error)
                #expect(try receiver.objects().isEmpty)
            }
        }

        #expect(faults.firedCount == 1)
        #expect(failures.count <= 1)
        #expect(failures.allSatisfy { $0.isTransient })
        #expect(receiver.requests.map(\.method) == ["POST", "POST"])
        let done = try #require(receipt)
        #expect(!done.resumable)
        #expect(try receiver.holds(object: done.serverID, identicalTo: file))
        #expect(try receiver.objects().count == 1)
    }
}
