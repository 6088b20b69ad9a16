/// Where one detection spent its time, in nanoseconds: building the pyramid levels (resize), their
/// integral images, and scanning windows plus grouping (detect).
public struct DetectionTimings: Sendable, Equatable {
    /// Resizing the image to every pyramid level.
    public var resizeNanoseconds: UInt64 = 0
    /// Computing integral (and square and tilted) tables for every level.
    public var integralNanoseconds: UInt64 = 0
    /// Evaluating the cascade over every window and grouping the hits.
    public var scanNanoseconds: UInt64 = 0

    /// All zero.
    public init() {}
}
