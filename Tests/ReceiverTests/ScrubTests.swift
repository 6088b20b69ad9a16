import Foundation
import Receiver
import Testing
import UploadProtocol

/// The background scrub (`ObjectScrubber`, `serve --scrub-rate`): every stored object hashed
/// again at a bounded rate, to find what the stamp check before each answer cannot see.
@Suite struct ScrubTests {
    /// What changes no stamp (bit rot under the file system) passes the stamp check, so the
    /// lookup still answers; a scrub pass hashes every object and finds it. The flip's stamp is
    /// forged back into the sidecar (a test cannot set a file's ctime).
    @Test func aScrubPassFindsAFlipThatChangedNoStamp() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let good = TestReceiver.bytes(40_000, seed: 34)
        let rotten = TestReceiver.bytes(3_000_000, seed: 35)
        let goodID = try IntegrityTests.store(good, in: receiver)
        let rottenID = try IntegrityTests.store(rotten, in: receiver)
        let rottenHex = Digest.hex(Digest.sha256(rotten))
        let path = receiver.directory + "/objects/" + rottenID
        try IntegrityTests.flipByte(at: 2_999_999, of: path, flip: .mtimeRestored)
        try IntegrityTests.forgeStamp(of: rottenID, in: receiver)
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(rottenHex)").status == 200,
                "the stamp check alone cannot see this flip")

        let report = try receiver.server.scrubOnce()
        #expect(report.corrupt == [rottenID])
        #expect(report.intact == 1)
        #expect(report.bytes == Int64(good.count + rotten.count))
        #expect(try receiver.client().request("HEAD", "/objects/by-digest/\(rottenHex)").status == 404)
        #expect(receiver.files(in: "quarantine") == [rottenID, rottenID + ".json"])
        #expect(try receiver.objects().map(\.id) == [goodID])
        #expect(try receiver.server.scrubOnce().corrupt.isEmpty)
    }

    /// The pacing's arithmetic: after each piece, wait until the bytes so far are due at the rate.
    @Test func thePacerWaitsUntilTheBytesAreDueAtTheRate() {
        var pacer = ScrubPacer(bytesPerSecond: 1 << 20)
        #expect(pacer.delay(afterHashing: 1 << 20, elapsed: .milliseconds(250)) == .milliseconds(750))
        #expect(pacer.delay(afterHashing: 1 << 19, elapsed: .milliseconds(1_000)) == .milliseconds(500))
        // Behind the rate (a slow disk): no pause until the bytes are due again.
        #expect(pacer.delay(afterHashing: 1 << 19, elapsed: .seconds(5)) == .zero)
        #expect(pacer.delay(afterHashing: 4 << 20, elapsed: .seconds(5)) == .seconds(1))
        #expect(pacer.bytes == 6 << 20)
    }

    /// A paced pass asks for pauses that keep it at the rate: its bytes over its time (hashing
    /// plus the pauses, which the hook counts as passed instead of sleeping) never exceed the rate,
    /// and it does not pause much beyond what the rate needs. Nothing here depends on a wall clock
    /// being fast or slow: the pauses are the pacing's plan.
    @Test func aPacedPassIsPlannedAtTheRate() throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let sizes = [2_500_000, 700_000, 1_300_000]
        for (index, size) in sizes.enumerated() { _ = try IntegrityTests.store(TestReceiver.bytes(size, seed: 40 + UInt64(index)), in: receiver) }
        let total = Int64(sizes.reduce(0, +))
        let rate: Int64 = 1 << 20
        var pauses: [Duration] = []
        let started = ContinuousClock.now
        let report = try receiver.server.scrubOnce(bytesPerSecond: rate) { pauses.append($0) }
        let hashing = ContinuousClock.now - started
        #expect(report.bytes == total)
        #expect(report.intact == sizes.count)
        #expect(pauses.reduce(.zero, +) == report.paused)
        let due = Duration.nanoseconds(total * 1_000_000_000 / rate)
        // At the rate: the plan (pauses and the time really spent) is at least the bytes' due time...
        #expect(report.paused + hashing >= due - .milliseconds(1), "paused \(report.paused), hashing \(hashing), due \(due)")
        // ...and not much more: the pauses alone never exceed it.
        #expect(report.paused <= due)
        // No pause is longer than one slice takes at the rate: the pass never bursts and then sleeps long.
        #expect(pauses.allSatisfy { $0 <= .nanoseconds(UploadStoreSlice.bytes * 1_000_000_000 / rate) + .milliseconds(1) })
        #expect(pauses.count >= Int(total / UploadStoreSlice.bytes) - 1)
    }

    /// The background scrub (a receiver started with a rate) finds, with no request at all, a
    /// flip that changed no stamp, in its pass at start; stopping the receiver ends it.
    @Test func theBackgroundScrubFindsCorruptionWithoutARequest() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = TestReceiver.bytes(600_000, seed: 36)
        let id: String
        do {
            let first = try TestReceiver(directory: directory)
            defer { first.stop() }
            id = try IntegrityTests.store(body, in: first)
        }
        try IntegrityTests.flipByte(at: 77, of: directory + "/objects/" + id, flip: .mtimeRestored)
        try IntegrityTests.forgeStamp(of: id, directoryPath: directory)

        let receiver = try TestReceiver(directory: directory) { $0.scrubBytesPerSecond = 1 << 30; $0.scrubInterval = 3_600 }
        defer { receiver.stop() }
        let deadline = ContinuousClock.now + .seconds(20)
        while !receiver.log.lines.contains(where: { $0.hasPrefix("scrub:") }) && ContinuousClock.now < deadline { usleep(20_000) }
        receiver.stop()
        #expect(receiver.files(in: "quarantine") == [id, id + ".json"])
        let line = try #require(receiver.log.lines.first { $0.hasPrefix("scrub:") })
        #expect(line.contains("corrupt, moved to quarantine/: \(id)"), "\(line)")
        #expect(!receiver.log.lines.contains { $0.contains("/objects") }, "a request was made: \(receiver.log.lines)")
    }

    /// A pass at a slow rate over a large object is ended by `stop()` within a slice, not at the
    /// end of the pass (16 MiB at 256 KiB/s would take 64 s).
    @Test func stoppingTheReceiverEndsAScrubPassPromptly() throws {
        let directory = TestReceiver.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let first = try TestReceiver(directory: directory)
            defer { first.stop() }
            _ = try IntegrityTests.store(TestReceiver.bytes(16 << 20, seed: 37), in: first)
        }
        let receiver = try TestReceiver(directory: directory) { $0.scrubBytesPerSecond = 256 << 10 }
        usleep(300_000)
        let started = ContinuousClock.now
        receiver.stop()
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(receiver.log.lines.contains { $0.hasPrefix("scrub:") && $0.hasSuffix("(stopped)") }, "\(receiver.log.lines)")
    }
}

/// The scrub's piece between two pacing decisions (`UploadStore.checkSlice`, 1 MiB).
enum UploadStoreSlice {
    static let bytes: Int64 = 1 << 20
}
