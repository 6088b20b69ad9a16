import Foundation
import Receiver
import Testing
import Transfer
import UploadProtocol

/// Connections cut mid-upload, by a proxy on the way (either direction) or by the receiver itself:
/// the client asks the receiver for its offset and sends only the rest.
@Suite struct InterruptionTests {
    /// The receiver drops the connection when the body reaches each offset, keeping the bytes
    /// before it: the appends that follow start exactly there.
    @Test(arguments: [3, 5, 6, 8], [3_000_000, 12_000_000])
    func receiverCutsAtOffsetsAreResumedExactlyThere(interopVersion: Int, size: Int) async throws {
        let cuts: [Int64] = size == 3_000_000 ? [0, 1, 1_048_576, 2_999_999] : [0, 65_536, 5_000_000, 11_999_999]
        let faults = FaultInjection(cutAtOffsets: cuts)
        let receiver = try LoopbackReceiver { $0.faultInjection = faults }
        let relay = try HTTPRelay(targetPort: receiver.port)
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

    /// A plain upload cannot resume. libcurl sends the body again once, from the start, when a
    /// reused connection breaks (the first cut); a cut on the fresh connection is a transient
    /// failure. Nothing partial is ever stored, and the next attempt stores the file once.
    @Test func plainUploadCutIsTransientAndTheRetryStoresItOnce() async throws {
        let faults = FaultInjection(cutAtOffsets: [1_000_000, 2_000_000])
        let receiver = try LoopbackReceiver { $0.faultInjection = faults }
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: .optionsNotImplemented)
        let file = try TestFile(size: 3_000_000, seed: 9)
        let uploader = Interop.uploader(to: relay.uploadURL)
        let metadata = try file.metadata()

        do {
            _ = try await uploader.upload(file: file.path, metadata: metadata)
            Issue.record("the cut upload succeeded")
        } catch {
            #expect(error.isTransient)
        }
        #expect(faults.firedCount == 2)
        #expect(receiver.requests.map(\.method) == ["POST", "POST"])
        #expect(try receiver.objects().isEmpty)

        let receipt = try await uploader.upload(file: file.path, metadata: metadata)
        #expect(!receipt.resumable)
        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        #expect(try receiver.objects().count == 1)
    }
}
