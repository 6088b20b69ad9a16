import PhotoAnalysis

/// Keeps analysis inside the memory it may use, so a memory-capped run stops early with "work
/// remains" instead of being killed.
///
/// The limit is the smallest of `--memory-limit`, the cgroup's limit and physical memory; the use
/// is the cgroup's current usage when the cgroup sets the limit, else this process's resident set.
/// A photo is admitted only when its estimated cost at its analysis scale (`AnalysisCost`, in
/// PhotoAnalysis) fits the headroom left after a reserve; one that does not is left for later,
/// never analysed at a smaller scale.
public struct MemoryGuard: Sendable {
    /// Where the numbers come from.
    public let probe: MemoryProbe
    /// `--memory-limit`, if given.
    public let configuredLimit: Int?
    /// Kept free for the runtime, SQLite, libcurl and what the estimate misses.
    public let reserve: Int

    public init(configuredLimit: Int? = nil, reserve: Int = 24 << 20, probe: MemoryProbe = MemoryProbe()) {
        self.configuredLimit = configuredLimit
        self.reserve = reserve
        self.probe = probe
    }

    /// A snapshot of the limit and the use.
    public struct Reading: Sendable, Equatable {
        public let limit: Int
        public let used: Int
        /// What may still be allocated: limit minus use minus the reserve (never negative).
        public let headroom: Int
        /// Which number set the limit.
        public let source: String
    }

    /// Reads the limit and the current use.
    public func read() -> Reading {
        var limit = Int.max
        var source = "none"
        var used = probe.residentSet() ?? 0
        if let physical = probe.physicalMemory(), physical < limit { limit = physical; source = "physical memory" }
        if let cgroup = probe.cgroupMemory(), cgroup.limit < limit {
            limit = cgroup.limit
            source = "cgroup memory.max"
            if let current = cgroup.current { used = current }
        }
        if let configured = configuredLimit, configured < limit {
            limit = configured
            source = "--memory-limit"
            used = probe.residentSet() ?? used
        }
        let headroom = max(0, limit - used - reserve)
        return Reading(limit: limit, used: used, headroom: headroom, source: source)
    }

    /// Headroom past which the guard never needs freed buffers out of the resident set: the
    /// 40 MB or so that malloc keeps of a photo's freed buffers cannot make a photo wait.
    public static let ampleHeadroom = 2 << 30

    /// Whether a run must have freed analysis buffers leave the resident set
    /// (`SystemMemory.returnLargeBuffersWhenFreed`), so the use the guard measures is what is
    /// live: under `--memory-limit` or a cgroup's limit, or with less than `ampleHeadroom`.
    /// Elsewhere it only costs CPU: every photo's large buffers were mapped afresh, about 8 ms of
    /// page faults per 12 MP photo (`analyze` of 24 photos, 2 slots: 0.25-0.32 s of system time
    /// against 0.07-0.12 s; peak resident set the same, 116-118 MB).
    public func needsFreedBuffersReturned() -> Bool {
        let reading = read()
        return reading.source == "--memory-limit" || reading.source == "cgroup memory.max"
            || reading.headroom < Self.ampleHeadroom
    }

    /// Before a run's analysis: `SystemMemory.returnLargeBuffersWhenFreed` where
    /// `needsFreedBuffersReturned`.
    public func prepareForAnalysis() {
        if needsFreedBuffersReturned() { SystemMemory.returnLargeBuffersWhenFreed() }
    }

    /// How many photos of `typicalCost` to take in the next page: as many as fit the headroom for
    /// `slots` at a time, between 1 and `maximum`; 0 when not even one fits.
    public static func pageSize(headroom: Int, typicalCost: Int, slots: Int, maximum: Int) -> Int {
        guard typicalCost > 0 else { return maximum }
        let concurrent = headroom / typicalCost
        if concurrent < 1 { return 0 }
        // A page is worked `slots` at a time: when fewer than `slots` fit at once, shrink the page too.
        let fit = concurrent >= slots ? maximum : max(1, maximum * concurrent / max(slots, 1))
        return min(maximum, max(1, fit))
    }
}
