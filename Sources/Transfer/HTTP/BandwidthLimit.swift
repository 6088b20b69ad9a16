import Foundation
import Synchronization

/// One upload budget shared by every transfer that holds it (`--bwlimit`): all of a runner's
/// slots together send at most the rate in force, which may follow a timetable
/// (`"08:00,512k 23:00,off"`, as rclone writes it). A token bucket holding at most a quarter of a
/// second of the rate; a transfer that takes more than is there waits for it, so the average over
/// any second stays at the rate.
public final class BandwidthLimit: Sendable {
    /// The rate from a time of day on: bytes per second, nil for no limit.
    public struct Entry: Sendable, Equatable {
        /// Minutes after midnight, local time.
        public var minute: Int
        public var bytesPerSecond: Int64?
    }

    /// The timetable, sorted by minute; one entry at minute 0 for a plain rate.
    public let entries: [Entry]
    private let bucket = Mutex<(tokens: Double, last: ContinuousClock.Instant)>((0, .now))
    private let minuteOfDay: @Sendable () -> Int

    /// Parses `2M`, `512k`, `1.5M`, `off`, or a timetable of `HH:MM,RATE` entries separated by
    /// spaces. A rate is bytes per second with an optional `k`, `M` or `G` (KiB, MiB, GiB); a bare
    /// number is KiB/s, as rclone reads it. Throws `invalid-request` naming what is wrong.
    public convenience init(parsing text: String) throws(TransferError) {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard !parts.isEmpty else { throw TransferError(.invalidRequest, "--bwlimit needs a rate such as 2M, or a timetable such as \"08:00,512k 23:00,off\"") }
        var entries: [Entry] = []
        if parts.count == 1 && !parts[0].contains(",") {
            entries = [Entry(minute: 0, bytesPerSecond: try Self.rate(String(parts[0])))]
        } else {
            for part in parts {
                let fields = part.split(separator: ",", maxSplits: 1)
                let clock = fields.first?.split(separator: ":") ?? []
                guard fields.count == 2, clock.count == 2, let hour = Int(clock[0]), let minute = Int(clock[1]),
                      (0..<24).contains(hour), (0..<60).contains(minute) else {
                    throw TransferError(.invalidRequest, "--bwlimit: '\(part)' is not HH:MM,RATE")
                }
                entries.append(Entry(minute: hour * 60 + minute, bytesPerSecond: try Self.rate(String(fields[1]))))
            }
        }
        self.init(entries: entries)
    }

    /// A limit with these entries; `minuteOfDay` tells the local time (injectable for tests).
    public init(entries: [Entry], minuteOfDay: @escaping @Sendable () -> Int = BandwidthLimit.localMinuteOfDay) {
        self.entries = entries.sorted { $0.minute < $1.minute }
        self.minuteOfDay = minuteOfDay
    }

    /// The rate in force now: the last entry at or before the time of day, else (before the
    /// first) the day's last entry, carried over from the evening before.
    public var bytesPerSecond: Int64? {
        let now = minuteOfDay()
        return (entries.last { $0.minute <= now } ?? entries.last)?.bytesPerSecond
    }

    /// How many bytes one read should take at most, so a slow limit sends small pieces often
    /// rather than a large one after a long wait; nil without a limit.
    public var pieceSize: Int? {
        guard let rate = bytesPerSecond else { return nil }
        return Int(max(1024, min(rate / 8, 1 << 20)))
    }

    /// Takes `count` bytes from the budget, waiting (on the calling thread, which is a transfer's
    /// own) until they may go. Returns false, without waiting out the rest, when `cancelled` says so.
    public func spend(_ count: Int, cancelled: () -> Bool = { false }) -> Bool {
        guard let rate = bytesPerSecond.map(Double.init), rate > 0 else { return true }
        let wait = bucket.withLock { state -> Double in
            let now = ContinuousClock.now
            let elapsed = Double((now - state.last).components.attoseconds) / 1e18 + Double((now - state.last).components.seconds)
            state.tokens = min(state.tokens + elapsed * rate, rate / 4)
            state.last = now
            state.tokens -= Double(count)
            return state.tokens < 0 ? -state.tokens / rate : 0
        }
        var left = wait
        while left > 0 {
            if cancelled() { return false }
            let step = min(left, 0.05)
            usleep(useconds_t(step * 1_000_000))
            left -= step
        }
        return true
    }

    /// `2M` -> 2 MiB/s; nil for `off`. Throws for anything else.
    static func rate(_ text: String) throws(TransferError) -> Int64? {
        let lowered = text.lowercased()
        if lowered == "off" || lowered == "0" { return nil }
        var number = Substring(lowered)
        var unit: Double = 1024   // a bare number is KiB/s, as in rclone
        switch number.last {
        case "k": unit = 1024; number = number.dropLast()
        case "m": unit = 1024 * 1024; number = number.dropLast()
        case "g": unit = 1024 * 1024 * 1024; number = number.dropLast()
        case "b": unit = 1; number = number.dropLast()
        default: break
        }
        guard let value = Double(number), value > 0, value.isFinite else {
            throw TransferError(.invalidRequest, "--bwlimit: '\(text)' is not a rate (e.g. 2M, 512k, off)")
        }
        return max(1, Int64(value * unit))
    }

    /// Minutes since local midnight.
    public static func localMinuteOfDay() -> Int {
        let parts = Calendar.current.dateComponents([.hour, .minute], from: Date())
        return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
    }
}
