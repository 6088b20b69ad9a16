#if canImport(Glibc)
import Glibc
#endif

/// CPU time of the calling thread, for benchmarks: unlike wall time it does not count the time
/// the thread waits for a core, which on a shared machine is most of the noise.
public enum ThreadCPUTime {
    /// Milliseconds of CPU the calling thread has used.
    public static func milliseconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) * 1000 + Double(spec.tv_nsec) / 1_000_000
    }

    /// Runs `work` `repeats` times and returns each run's thread CPU time in milliseconds, sorted.
    public static func samples(_ repeats: Int, _ work: () throws -> Void) rethrows -> [Double] {
        var times: [Double] = []
        times.reserveCapacity(repeats)
        for _ in 0..<max(1, repeats) {
            let start = milliseconds()
            try work()
            times.append(milliseconds() - start)
        }
        return times.sorted()
    }
}
