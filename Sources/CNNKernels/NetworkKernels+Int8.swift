/// The int8 1x1 convolution: activations quantised to 0...255 with a per-tensor scale and zero
/// point, weights to -127...127 with a scale per output channel, products summed exactly in Int32,
/// then one multiply and one add per channel back to Float before the same epilogue as the Float
/// kernel (ReLU, residual add, ReLU). Every kernel set computes the same Int32 sums and the same
/// Float operations in the same order, so all three give bit-identical outputs.
///
/// Weights come in one of two layouts, in blocks of 16 output channels (the channels past the real
/// ones are zero and never stored):
/// - `quads` (AVX-512 VNNI): per block, `inStride / 4` groups of 16 channels x 4 inputs, Int8, one
///   64-byte vector per group for `vpdpbusd`; activations are UInt8.
/// - `pairs` (AVX2 and portable): per block, `inStride / 2` groups of 16 channels x 2 inputs,
///   Int16, for `vpmaddwd`; activations are Int16 (0...255). Widening before the multiply keeps
///   the sums exact: `vpmaddubsw` would saturate a pair of 255 x 127 products.
extension NetworkKernels {
    /// How a set's int8 kernels want their weights and activations.
    public enum Int8Layout: Sendable {
        case quads
        case pairs

        /// Bytes one quantised activation takes.
        public var activationBytes: Int { self == .quads ? 1 : 2 }
    }

    /// Output channels per int8 weight block.
    public static let int8Block = 16

    /// The activation quantisation of one tensor: `q = clamp(round(x / scale) + zeroPoint, 0, 255)`.
    public struct Quantization: Sendable, Equatable {
        public var scale: Float
        public var zeroPoint: Int32

        public init(scale: Float, zeroPoint: Int32) {
            self.scale = scale
            self.zeroPoint = zeroPoint
        }

        /// The quantisation that maps `minimum...maximum` (widened to include 0) onto 0...255.
        public init(minimum: Float, maximum: Float) {
            let low = min(minimum, 0), high = max(maximum, 0)
            let scale = high > low ? (high - low) / 255 : 1
            self.scale = scale
            self.zeroPoint = Int32(max(0, min(255, (-low / scale).rounded())))
        }
    }

    /// Eight floats quantised, still as Floats holding whole numbers in 0...255: a multiply by the
    /// inverse scale, rounding to nearest even, the zero point added, then clamped. Every set
    /// quantises through this, so all agree on every value; each converts to integers its own way
    /// (the generic vector conversions are out-of-line calls on this toolchain).
    @inlinable @inline(__always)
    public static func quantized8(_ v: SIMD8<Float>, inverse: SIMD8<Float>, zero: SIMD8<Float>) -> SIMD8<Float> {
        let low = SIMD8<Float>(repeating: 0), high = SIMD8<Float>(repeating: 255)
        let q = (v * inverse).rounded(.toNearestOrEven) + zero
        return q.replacing(with: low, where: q .< low).replacing(with: high, where: q .> high)
    }

    /// Quantises `count` floats (a multiple of 8: tensors are channel-padded) into 0...255 as Int16,
    /// converting lane by lane (the portable set).
    @inlinable @inline(__always)
    public static func quantizePairs(_ input: UnsafePointer<Float>, count: Int, _ q: Quantization,
                                     output: UnsafeMutablePointer<Int16>) {
        let inverse = SIMD8<Float>(repeating: 1 / q.scale), zero = SIMD8<Float>(repeating: Float(q.zeroPoint))
        var i = 0
        while i < count {
            let v = quantized8(load8(input + i), inverse: inverse, zero: zero)
            for lane in 0..<8 { output[i + lane] = Int16(v[lane]) }
            i += 8
        }
    }

    /// The int8 epilogue of 16 channels of one pixel: `sums` (the Int32 sums converted to Float,
    /// exactly below 2^24) `* multiplier + bias`, then `epilogue` on each half of 8 that the
    /// tensor has (`outStride` is a multiple of 8). Transparent: `@inline(__always)` left it out
    /// of line in the AVX-512 kernel, 14% of an inference.
    @_transparent
    public static func finishInt8(_ sums: SIMD16<Float>, multipliers: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                  output: UnsafeMutablePointer<Float>, outStride: Int, pixel: Int, channel o: Int,
                                  epilogue: Epilogue) {
        let m = UnsafeRawPointer(multipliers + o).loadUnaligned(as: SIMD16<Float>.self)
        let b = UnsafeRawPointer(bias + o).loadUnaligned(as: SIMD16<Float>.self)
        let v = sums * m + b
        let y = output + pixel * outStride + o
        store8(epilogue.apply(v.lowHalf, pixel: pixel, channel: o), y)
        if o + 8 < outStride { store8(epilogue.apply(v.highHalf, pixel: pixel, channel: o + 8), y + 8) }
    }

    /// The int8 1x1 convolution over the `pairs` layout in plain Swift (the portable set): Int32
    /// sums start at `sumBase` (which folds the activations' zero point in), then
    /// `finishInt8`.
    @inlinable @inline(__always)
    public static func pointwiseInt8Pairs(input: UnsafePointer<Int16>, inStride: Int, pixels: Int,
                                          weights: UnsafePointer<Int16>, sumBase: UnsafePointer<Int32>,
                                          multipliers: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                          output: UnsafeMutablePointer<Float>, outStride: Int, epilogue: Epilogue) {
        var o = 0
        while o < outStride {
            let w = weights + o * inStride
            let base = UnsafeRawPointer(sumBase + o).loadUnaligned(as: SIMD16<Int32>.self)
            for p in 0..<pixels {
                let x = input + p * inStride
                var sums = base
                var wi = w
                var i = 0
                while i < inStride {
                    let x0 = SIMD16<Int32>(repeating: Int32(x[i])), x1 = SIMD16<Int32>(repeating: Int32(x[i + 1]))
                    let pair = UnsafeRawPointer(wi).loadUnaligned(as: SIMD32<Int16>.self)
                    let w0 = SIMD16<Int32>(truncatingIfNeeded: pair.evenHalf), w1 = SIMD16<Int32>(truncatingIfNeeded: pair.oddHalf)
                    sums = sums &+ x0 &* w0 &+ x1 &* w1
                    wi += 32
                    i += 2
                }
                var floats = SIMD16<Float>()
                for lane in 0..<16 { floats[lane] = Float(sums[lane]) }
                finishInt8(floats, multipliers: multipliers, bias: bias, output: output, outStride: outStride,
                           pixel: p, channel: o, epilogue: epilogue)
            }
            o += int8Block
        }
    }

    /// A depthwise store of quantised Int16 activations (the `pairs` sets), lane by lane.
    public enum Int16Store: DepthwiseStore {
        @inlinable @inline(__always)
        public static func store(_ v: SIMD8<Float>, _ output: UnsafeMutableRawPointer, _ index: Int, _ q: Quantization?) {
            guard let q else { return }
            let x = quantized8(v, inverse: SIMD8(repeating: 1 / q.scale), zero: SIMD8(repeating: Float(q.zeroPoint)))
            let out = output.assumingMemoryBound(to: Int16.self) + index
            for lane in 0..<8 { out[lane] = Int16(x[lane]) }
        }
    }
}
