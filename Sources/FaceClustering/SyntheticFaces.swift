/// Synthetic face embeddings for tests and the clustering benchmark, until the real descriptor
/// network is in: identities as centres in 128 dimensions, each face its identity's centre plus
/// noise. The same seed gives the same Floats on every machine (SplitMix64, and Gaussians as sums
/// of uniforms: no libm call whose last bit could differ).
///
/// With the defaults, two faces of one identity are about 0.42 apart and two identities' faces
/// about 1.05, the spread dlib reports around its 0.6 threshold.
public struct SyntheticFaces: Sendable {
    /// The standard deviation of each coordinate of an identity's centre.
    public var centreSpread: Float = 0.0625
    /// The standard deviation of each coordinate of a face around its centre.
    public var faceSpread: Float = 0.026
    private var state: UInt64
    private var centres: [Int: [Float]] = [:]

    /// A generator whose whole output follows from `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The centre of identity `identity` (made on first use from its own seed, so it does not
    /// depend on the order identities are asked for).
    public mutating func centre(of identity: Int) -> [Float] {
        if let centre = centres[identity] { return centre }
        var own = SyntheticFaces(seed: state ^ (UInt64(truncatingIfNeeded: identity) &* 0xD6E8_FEB8_6659_FD93))
        let centre = (0..<FaceEmbedding.dimension).map { _ in own.gaussian() * centreSpread }
        centres[identity] = centre
        return centre
    }

    /// One face of `identity`: its centre plus fresh noise.
    public mutating func face(of identity: Int) -> [Float] {
        face(near: centre(of: identity))
    }

    /// A face around `centre`: fresh noise from this generator's stream added to it.
    public mutating func face(near centre: [Float]) -> [Float] {
        centre.map { $0 + gaussian() * faceSpread }
    }

    /// The next 64 pseudo-random bits (SplitMix64).
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A whole number in `0..<bound`.
    public mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(max(bound, 1)))
    }

    /// A standard normal value, approximately: the sum of 12 uniforms in [0, 1) less 6.
    mutating func gaussian() -> Float {
        var sum: Float = 0
        for _ in 0..<12 { sum += Float(next() >> 40) / Float(1 << 24) }
        return sum - 6
    }
}
