/// Keeps analysis inside the memory it may use, so a memory-capped run stops early with "work
/// remains" instead of being killed.
///
/// The limit is the smallest of `--memory-limit`, the cgroup's limit and physical memory; the use
/// is the cgroup's current usage when the cgroup sets the limit, else this process's resident set.
/// A photo is admitted only when its estimated cost at its analysis scale fits the headroom left
/// after a reserve; one that does not is left for later, never analysed at a smaller scale.
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

    /// The estimated peak bytes of analysing a photo decoded to `width` x `height` (stored size)
    /// at scale 1/`denominator`, analysed at `analysisShortSide`. Progressive JPEGs keep every
    /// DCT coefficient of the full image in memory whatever the scale, so they cost more; so does
    /// HEIF, decoded at full size (4:2:0 planes in the codec and in libheif) before it is reduced:
    /// pass `ImageHeader.decodesFullFrame` as `progressive`. `channels` is 3 for a colour decode
    /// (BlazeFace) and `detectorBytes` what the detector holds besides the image (BlazeFace's
    /// activation buffers). `integralImages` is for a cascade, which scans integral images of
    /// its pyramid; BlazeFace makes none.
    public static func estimatedCost(width: Int, height: Int, denominator: Int, progressive: Bool = false,
                                     analysisShortSide: Int, channels: Int = 1, integralImages: Bool = true,
                                     detectorBytes: Int = 0) -> Int {
        let w = (width + denominator - 1) / denominator
        let h = (height + denominator - 1) / denominator
        let decoded = w * h * max(1, channels)    // gray or RGB output
        let turned = decoded                      // orientation copy
        let short = max(1, min(w, h))
        let scale = min(1.0, Double(analysisShortSide) / Double(short))
        let analysed = Int(Double(w) * scale * Double(h) * scale)
        let integrals = integralImages ? analysed * (4 + 8) * 2 : 0  // sum and squared sum, plus one pyramid level in flight
        let coefficients = progressive ? width * height * 3 : w * 16 * 3 * 2  // 4:2:0 = 1.5 comps x 2 bytes
        return decoded + turned + analysed * max(1, channels) + integrals + coefficients + detectorBytes + (1 << 20)
    }

    /// `bytes` in whole MiB, rounded up (for messages about what a photo needs).
    public static func mebibytes(_ bytes: Int) -> Int { (bytes + (1 << 20) - 1) >> 20 }

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
