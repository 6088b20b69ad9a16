import FaultProxy
import Foundation
import Receiver
import Testing
import Transfer
import UploadProtocol

/// An optimistic creation (the whole small file in one POST, the 104 giving
/// its upload URL at once) cut by a proxy must resume from the receiver's offset, not start over.
@Suite struct OptimisticCutTests {
    /// client -> FaultProxy (cuts connection 0's POST after `cutAfter` bytes) -> HTTPRelay -> receiver.
    @Test(arguments: [20_000, 70_000, 160_000, 600_000, 1_500_000, 2_900_000])
    func aCutOptimisticCreationResumes(cutAfter: Int) async throws {
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port)
        defer { relay.stop() }
        let plan = FaultPlan { connection in connection == 0 ? .cut(afterBytes: cutAfter, direction: .upstream) : nil }
        let proxy = try FaultProxy(targetPort: relay.port, plan: plan)
        defer { proxy.stop() }
        let file = try TestFile(size: 3_000_000, seed: UInt64(cutAfter))
        let uploader = Interop.uploader(to: "http://127.0.0.1:\(proxy.port)/uploads")
        let receipt = try await uploader.upload(file: file.path, metadata: try file.metadata())
        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        #expect(proxy.connectionCount >= 2, "the plan's cut did not happen")
        let posts = relay.requests("POST")
        let patches = relay.requests("PATCH")
        #expect(posts.count == 1, "started over: \(posts.count) creations")
        // Resumed from the bytes that reached the receiver before the cut, not from 0.
        let offset = patches.first.flatMap { $0.head[ResumableUpload.Header.uploadOffset] }.flatMap { Int64($0) }
        #expect((offset ?? 0) > 0, "the first append started at \(offset.map(String.init) ?? "none")")
    }
}
