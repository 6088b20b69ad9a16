/// How long to leave a destination alone while it is away: the first wait, then each wait twice
/// the last, up to a ceiling; back to the first wait once it answers. The drain loop probes on
/// this rhythm (`DrainSchedule`); the agent holds new jobs on it (`AgentRunner`). With a first
/// wait of 1 s and a ceiling of 30 s the waits are 1, 2, 4, 8, 16, 30, 30, … s.
struct AwayBackoff: Sendable, Equatable {
    typealias Instant = ContinuousClock.Instant

    let first: Duration
    let ceiling: Duration
    /// The wait the next failure starts.
    private(set) var nextWait: Duration
    /// No try before this instant; nil while the destination answers.
    private(set) var until: Instant?

    init(first: Duration, ceiling: Duration) {
        self.first = first
        self.ceiling = max(first, ceiling)
        nextWait = first
    }

    /// The destination did not answer at `now`. Returns the wait this failure starts.
    @discardableResult
    mutating func failed(now: Instant) -> Duration {
        let wait = nextWait
        until = now + wait
        nextWait = min(nextWait * 2, ceiling)
        return wait
    }

    /// The destination answered: the next failure starts from the first wait again.
    mutating func answered() {
        nextWait = first
        until = nil
    }

    /// Whether a try may go at `now`.
    func isDue(now: Instant) -> Bool { until.map { now >= $0 } ?? true }
}
