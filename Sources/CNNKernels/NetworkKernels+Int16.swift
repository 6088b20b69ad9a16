/// The 16-bit integer convolution of the face descriptor: activations quantised to
/// `0...levels` (more than int8's 255: dlib's ResNet loses too much at 8 bits, see
/// `Models/face-embedding.md`), weights to Int16 of a magnitude the caller bounds so that no Int32
/// sum can overflow, both in the `pairs` layout of `NetworkKernels+Int8.swift` whatever a set's
/// own int8 layout. The products and sums are exact Int32 arithmetic, and the conversion back to
/// Float is `finishInt8`'s, so every kernel set gives the same bits.
extension NetworkKernels {
    /// Eight floats quantised to whole numbers in `0...high`, still as Floats: a multiply by the
    /// inverse scale, rounding to nearest even, the zero point added, then clamped. Every set
    /// quantises through this, so all agree on every value.
    @inlinable @inline(__always)
    public static func quantizedLevels(_ v: SIMD8<Float>, inverse: SIMD8<Float>, zero: SIMD8<Float>,
                                       high: SIMD8<Float>) -> SIMD8<Float> {
        let low = SIMD8<Float>(repeating: 0)
        let q = (v * inverse).rounded(.toNearestOrEven) + zero
        return q.replacing(with: low, where: q .< low).replacing(with: high, where: q .> high)
    }

    /// Quantises `count` floats (a multiple of 8) to Int16 in `0...levels` with `q`'s scale and
    /// zero point, converting lane by lane (the portable set).
    @inlinable @inline(__always)
    public static func quantizeInt16Lanes(_ input: UnsafePointer<Float>, count: Int, _ q: Quantization, levels: Int32,
                                          output: UnsafeMutablePointer<Int16>) {
        let inverse = SIMD8<Float>(repeating: 1 / q.scale), zero = SIMD8<Float>(repeating: Float(q.zeroPoint))
        let high = SIMD8<Float>(repeating: Float(levels))
        var i = 0
        while i < count {
            let v = quantizedLevels(load8(input + i), inverse: inverse, zero: zero, high: high)
            for lane in 0..<8 { output[i + lane] = Int16(v[lane]) }
            i += 8
        }
    }
}

extension NetworkKernels.Quantization {
    /// The quantisation that maps `minimum...maximum` (widened to include 0) onto `0...levels`.
    public init(minimum: Float, maximum: Float, levels: Int32) {
        let low = min(minimum, 0), high = max(maximum, 0)
        let scale = high > low ? (high - low) / Float(levels) : 1
        self.init(scale: scale, zeroPoint: Int32(max(0, min(Float(levels), (-low / scale).rounded()))))
    }
}
