/// A seeded generator for the matrix's choices (kill times, byte offsets), so a run with the same
/// `--seed` makes the same choices. SplitMix64: small and good enough for picking test points.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A generator for one scenario, derived from the run's seed and the scenario's name, so adding
    /// a scenario does not change the choices of the others.
    static func forScenario(_ name: String, seed: UInt64) -> SeededRandom {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return SeededRandom(seed: seed ^ hash)
    }
}
