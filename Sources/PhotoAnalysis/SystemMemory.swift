import CMalloc

/// The C library's allocator, asked through the CMalloc shim: one place for the calls.
public enum SystemMemory {
    /// Returns the free memory malloc holds in every arena to the system (`malloc_trim(0)`).
    /// Large buffers freed by an analysis otherwise stay resident, and the memory guard, which
    /// measures use by the resident set or the cgroup's charge, would count them as taken.
    public static func returnFreePages() {
        _ = pd_malloc_trim()
    }

    /// Has malloc give buffers of 128 KiB or more back to the system as soon as they are freed.
    /// By default glibc raises its thresholds after the first large free (up to 32 MiB) and then
    /// keeps such buffers in its heaps, where `malloc_trim` cannot reach the top of a thread's
    /// heap: after one 12 MP photo the resident set stayed about 40 MB above what was live, and
    /// every later photo was deferred under a limit that held it. Process-wide; repeating it is
    /// harmless. Costs about 2 % more CPU (the buffers' pages are mapped afresh per photo).
    public static func returnLargeBuffersWhenFreed() {
        _ = pd_malloc_fix_thresholds(128 << 10)
    }
}
