import Foundation
import Testing
@testable import Transfer

/// `--bwlimit` rates and timetables.
@Suite struct BandwidthLimitTests {
    @Test(arguments: [("2M", 2 * 1024 * 1024), ("512k", 512 * 1024), ("1.5M", 1_572_864), ("100", 100 * 1024), ("300b", 300)] as [(String, Int64)])
    func ratesParse(text: String, bytes: Int64) throws {
        #expect(try BandwidthLimit(parsing: text).bytesPerSecond == bytes)
    }

    @Test(arguments: ["", "fast", "-1M", "08:00", "25:00,1M", "08:00,1M 9:61,off"])
    func badRatesAreRefused(text: String) {
        #expect(throws: TransferError.self) { _ = try BandwidthLimit(parsing: text) }
    }

    @Test func aTimetableFollowsTheTimeOfDayAndWrapsAroundMidnight() throws {
        let parsed = try BandwidthLimit(parsing: "08:00,512k 23:00,off")
        func rate(at minute: Int) -> Int64? { BandwidthLimit(entries: parsed.entries, minuteOfDay: { minute }).bytesPerSecond }
        #expect(rate(at: 7 * 60 + 59) == nil)        // before 08:00: the evening's "off" goes on
        #expect(rate(at: 8 * 60) == Int64(524_288))
        #expect(rate(at: 22 * 60 + 59) == Int64(524_288))
        #expect(rate(at: 23 * 60) == nil)
    }

    /// Three threads share one budget: together they send at the rate, not three times it.
    @Test func threadsShareOneBudget() {
        let limit = BandwidthLimit(entries: [.init(minute: 0, bytesPerSecond: 400_000)])
        let started = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            for _ in 0..<10 { _ = limit.spend(20_000) }   // 600 KB in all
        }
        let seconds = Double((ContinuousClock.now - started).components.seconds)
            + Double((ContinuousClock.now - started).components.attoseconds) / 1e18
        // 600 KB at 400 KB/s with a 0.25 s burst: at least 1.25 s.
        #expect(seconds >= 1.2, "took \(seconds) s")
    }

    @Test func aStopCutsTheWait() {
        let limit = BandwidthLimit(entries: [.init(minute: 0, bytesPerSecond: 1024)])
        let started = ContinuousClock.now
        #expect(limit.spend(1 << 20, cancelled: { ContinuousClock.now - started > .milliseconds(100) }) == false)
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
