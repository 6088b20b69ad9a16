import Foundation

/// A progress line on a terminal (count, bar, rate, ETA), redrawn at most ten times a second;
/// nothing when stderr is not a terminal, so piped output stays clean.
final class ProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private let title: String
    private var total: Int
    private var done = 0
    private var extra = ""
    private let started = ContinuousClock.now
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private let enabled: Bool

    /// A bar for `total` items; disabled with `quiet` (e.g. under --json).
    init(title: String, total: Int, quiet: Bool = false) {
        self.title = title
        self.total = max(total, 0)
        self.enabled = !quiet && Console.shared.stderrIsTerminal
    }

    /// Counts `count` more items done, with an optional status suffix, and redraws if due.
    func advance(by count: Int = 1, status: String? = nil) {
        lock.lock()
        done += count
        if let status { extra = status }
        let now = ContinuousClock.now
        let due = enabled && (now - lastDraw > .milliseconds(100) || done >= total)
        if due { lastDraw = now }
        let line = due ? render(now: now) : nil
        lock.unlock()
        if let line { Console.shared.progress(line) }
    }

    /// Changes the total (work found late, or work left for later).
    func setTotal(_ newTotal: Int) {
        lock.lock(); total = max(newTotal, done); lock.unlock()
    }

    /// Removes the line.
    func finish() {
        if enabled { Console.shared.endProgress() }
    }

    /// Items per second so far.
    var rate: Double {
        lock.lock(); defer { lock.unlock() }
        let seconds = (ContinuousClock.now - started).seconds
        return seconds > 0 ? Double(done) / seconds : 0
    }

    private func render(now: ContinuousClock.Instant) -> String {
        let seconds = (now - started).seconds
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let width = 24
        let filled = total > 0 ? min(width, done * width / total) : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        var line = "\(title) [\(bar)] \(done)/\(total) \(String(format: "%.1f", rate))/s"
        if rate > 0 && total > done {
            line += " ETA \(formatDuration(Double(total - done) / rate))"
        }
        if !extra.isEmpty { line += " \(extra)" }
        return line
    }
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}

/// `1:05`, `12:03:09`: a duration for people.
func formatDuration(_ seconds: Double) -> String {
    let total = Int(seconds.rounded())
    let h = total / 3600, m = total / 60 % 60, s = total % 60
    return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
}
