/// SplitMix64 (Steele, Lea and Flood, 2014): a small, fast generator whose whole state is the
/// seed, so the same seed gives the same holdout split on every machine and every run.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator that starts from `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A uniform index in 0..<bound by rejection, independent of the standard library's algorithm
    /// (which may change between toolchains).
    public mutating func index(below bound: Int) -> Int {
        precondition(bound > 0)
        let range = UInt64(bound)
        let limit = UInt64.max - UInt64.max % range
        while true {
            let value = next()
            if value < limit { return Int(value % range) }
        }
    }

    /// Fisher–Yates shuffle of `values` driven by this generator.
    public mutating func shuffle<Element>(_ values: inout [Element]) {
        guard values.count > 1 else { return }
        for position in stride(from: values.count - 1, to: 0, by: -1) {
            values.swapAt(position, index(below: position + 1))
        }
    }
}
