import Foundation

/// A progress line on a terminal (count, bar, rate, ETA), redrawn at most ten times a second.
/// When stderr is not a terminal (a log file, the journal of a systemd service), a plain line
/// ("analysing: 120/5000, 3.2/s, about 25:25 left") every `logInterval` instead, so a long run is
/// never silent; quiet (`--json`) prints neither.
final class ProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private let title: String
    private var total: Int
    private var done = 0
    private var extra = ""
    private let started = ContinuousClock.now
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private let enabled: Bool
    /// When stderr is not a terminal: how often a plain progress line is written (nil: never).
    private let logInterval: Duration?
    private var lastLog = ContinuousClock.now

    /// A bar for `total` items; disabled with `quiet` (e.g. under --json).
    init(title: String, total: Int, quiet: Bool = false) {
        self.title = title
        self.total = max(total, 0)
        self.enabled = !quiet && Console.shared.stderrIsTerminal
        // PHOTODRAIN_PROGRESS_INTERVAL (seconds) changes it, for tests and chatty logs.
        let seconds = ProcessInfo.processInfo.environment["PHOTODRAIN_PROGRESS_INTERVAL"].flatMap(Double.init) ?? 15
        self.logInterval = quiet || Console.shared.stderrIsTerminal || seconds <= 0 ? nil : .milliseconds(Int(seconds * 1000))
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
        var logLine: String?
        if let logInterval, now - lastLog >= logInterval {
            lastLog = now
            logLine = plainLine(now: now)
        }
        lock.unlock()
        if let line { Console.shared.progress(line) }
        if let logLine { Console.shared.err(logLine) }
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

    /// The line for a log: no bar, no carriage return.
    private func plainLine(now: ContinuousClock.Instant) -> String {
        let seconds = (now - started).seconds
        let rate = seconds > 0 ? Double(done) / seconds : 0
        var line = "\(title): \(done)/\(total), \(String(format: "%.1f", rate))/s"
        if rate > 0 && total > done { line += ", about \(formatDuration(Double(total - done) / rate)) left" }
        if !extra.isEmpty { line += "; \(extra)" }
        return line
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
