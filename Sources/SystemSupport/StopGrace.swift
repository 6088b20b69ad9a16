/// How every runner stops, written once (`drain`, `analyze`, `wake`, `agent`). A stop (a signal,
/// `--expire-after`, memory running out, `wake`'s runtime limit or `willTerminate`) starts nothing
/// new. A transfer in flight is cancelled at once: its job stays resumable from the receiver's
/// offset, so cancelling loses nothing. An analysis in flight cannot be cancelled inside a C
/// decoder: it gets `inFlight` to finish and bank its verdict (so a stop rarely throws one away),
/// and is abandoned after that (its photo is analysed again by the next run). Before the process
/// exits it waits up to `beforeExit` for the threads it abandoned, because `exit()` runs the C
/// libraries' exit handlers (libcrypto, libheif's codecs) under any thread still inside them.
public enum StopGrace {
    /// How long analyses in flight may finish after a stop: a typical photo takes well under a
    /// second, and a stop must stay prompt (systemd's SIGTERM, the extension's `willTerminate`).
    public static let inFlight: Duration = .seconds(1)
    /// How long a caller that cannot wait for the run's own end (`wake`'s `willTerminate`) gives
    /// it after a stop: the grace, and the run's bookkeeping after it (releasing its claims).
    public static let runEnds: Duration = inFlight + .milliseconds(500)
    /// How long the process waits before it exits for threads a stop abandoned (an analysis past
    /// its grace takes seconds at the most, on the largest photo).
    public static let beforeExit: Duration = .seconds(10)
}
