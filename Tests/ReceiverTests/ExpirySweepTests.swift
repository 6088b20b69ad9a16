import Foundation
import Receiver
import Testing
import UploadProtocol

/// The background housekeeping of `uploads/` (`ExpirySweeper`): expiry without traffic, a bounded
/// amount per pass, never inside a request; and finished uploads' records written as complete.
@Suite struct ExpirySweepTests {
    /// Expiry ran inside whichever request found it due, and never without
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

    /// The first request after the sweep fell due did the sweep (5,274 expired
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

    /// The record of every finished upload stayed `"complete": false` on disk
    /// (completion leaves it as it is, to keep file deletions off the hot path, and it reads as
    /// complete). The background pass now writes it as complete; HEAD answers as before, also
    /// after a restart.
    @Test func aFinishedUploadsRecordIsWrittenAsComplete() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(20_000, seed: 22)
        let fields = ["upload-complete", "upload-offset", "upload-length", "x-server-resource-id", "repr-digest"]
        let version = [("Upload-Draft-Interop-Version", "8")]
        let path: String
        let before: [String?]
        do {
            let receiver = try TestReceiver(directory: directory) { $0.sweepInterval = 0.05 }
            defer { receiver.stop() }
            path = try receiver.createPartialUpload(body[0..<5_000], version: 8)
            try receiver.completeUpload(path, body: body, from: 5_000, version: 8)
            let head = try receiver.client().request("HEAD", path, headers: version)
            #expect(head.status == 204)
            before = fields.map { head[$0] }
            let record = directory + "/uploads/" + path.dropFirst("/uploads/".count) + ".json"
            let deadline = ContinuousClock.now + .seconds(10)
            while try Self.fields(of: record)["complete"] as? Bool != true && ContinuousClock.now < deadline { usleep(20_000) }
            let written = try Self.fields(of: record)
            #expect(written["complete"] as? Bool == true, "\(written)")
            #expect(written["objectID"] as? String == head["x-server-resource-id"])
            #expect(written["length"] as? Int == body.count)
            let after = try receiver.client().request("HEAD", path, headers: version)
            #expect(after.status == 204)
            #expect(fields.map { after[$0] } == before)
        }
        let restarted = try TestReceiver(directory: directory)
        defer { restarted.stop() }
        let head = try restarted.client().request("HEAD", path, headers: version)
        #expect(head.status == 204)
        #expect(fields.map { head[$0] } == before)
        #expect(before[0] == "?1" && before[1] == "20000")
    }

    private static func fields(of record: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: record))) as? [String: Any] ?? [:]
    }
}
