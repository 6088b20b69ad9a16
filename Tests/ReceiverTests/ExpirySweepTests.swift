import Foundation
import Receiver
import Testing
import UploadProtocol

/// The background housekeeping of `uploads/` (`ExpirySweeper`): expiry without traffic, a bounded
/// amount per pass, never inside a request.
@Suite struct ExpirySweepTests {
    /// Issue 22 item 4: expiry ran inside whichever request found it due, and never without
    /// traffic. Now a background thread removes expired uploads, at most `sweepBatch` per pass.
    @Test func expiredUploadsAreRemovedWithoutTrafficABatchAtATime() throws {
        let receiver = try TestReceiver { $0.partialTTL = 600; $0.sweepInterval = 0.05; $0.sweepBatch = 4 }
        defer { receiver.stop(); receiver.removeDirectory() }
        for i in 0..<10 { _ = try receiver.createPartialUpload(TestReceiver.bytes(100, seed: UInt64(i))[...], version: 8) }
        #expect(receiver.files(in: "uploads").count == 20)
        receiver.clock.advance(by: 700)
        let deadline = ContinuousClock.now + .seconds(10)
        while !receiver.files(in: "uploads").isEmpty && ContinuousClock.now < deadline { usleep(20_000) }
        #expect(receiver.files(in: "uploads").isEmpty)
        receiver.stop()  // waits for the sweep thread, so every log line is written
        let removed = receiver.log.lines.compactMap { line -> Int? in
            guard line.hasPrefix("expired ") else { return nil }
            return Int(line.dropFirst("expired ".count).prefix { $0.isNumber })
        }
        #expect(removed.reduce(0, +) == 10, "\(receiver.log.lines)")
        #expect(removed.allSatisfy { $0 <= 4 }, "a pass removed more than its batch: \(removed)")
    }

    /// Issue 22 item 4: the first request after the sweep fell due did the sweep (5,274 expired
    /// uploads made one `GET /healthz` take 16 s). No request removes an upload it does not name.
    @Test func requestsNeverSweep() throws {
        let receiver = try TestReceiver { $0.partialTTL = 600; $0.sweepInterval = 3_600 }
        defer { receiver.stop(); receiver.removeDirectory() }
        for i in 0..<5 { _ = try receiver.createPartialUpload(TestReceiver.bytes(100, seed: UInt64(i))[...], version: 8) }
        receiver.clock.advance(by: 700)  // every upload expired, and a sweep long due by the old rule
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
        #expect(try receiver.client().request("GET", "/objects").status == 200)
        #expect(try receiver.client().request("OPTIONS", "/uploads").status == 200)
        #expect(receiver.files(in: "uploads").count == 10, "a request swept")
    }
}
