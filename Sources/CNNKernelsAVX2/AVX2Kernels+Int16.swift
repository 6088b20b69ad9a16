import _Builtin_intrinsics.intel
import CNNKernels

/// The 16-bit integer convolution with AVX2: the `pairs` kernel of the int8 1x1 convolution
/// (`vpmaddwd` sums each pair of Int16 products exactly, whatever their magnitude), and the
/// quantisation to `0...levels` sixteen values at a time.
extension AVX2Kernels {
    public static func quantizeInt16(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization, levels: Int32,
                                     output: UnsafeMutablePointer<Int16>) {
        // Two rounding-exact converts (the values are whole numbers in 0...levels), a saturating
        // pack that leaves them as they are, and a permute to undo the pack's interleaving.
        let inverse = SIMD8<Float>(repeating: 1 / q.scale), zero = SIMD8<Float>(repeating: Float(q.zeroPoint))
        let high = SIMD8<Float>(repeating: Float(levels))
        let order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)
        var i = 0
        while i + 16 <= count {
            let a = NetworkKernels.quantizedLevels(NetworkKernels.load8(input + i), inverse: inverse, zero: zero, high: high)
            let b = NetworkKernels.quantizedLevels(NetworkKernels.load8(input + i + 8), inverse: inverse, zero: zero, high: high)
            let packed = _mm256_packus_epi32(_mm256_cvtps_epi32(a), _mm256_cvtps_epi32(b))
            UnsafeMutableRawPointer(output + i).storeBytes(of: _mm256_permutevar8x32_epi32(packed, order), as: __m256i.self)
            i += 16
        }
        if i < count {
            NetworkKernels.quantizeInt16Lanes(input + i, count: count - i, q, levels: levels, output: output + i)
        }
    }

    public static func pointwiseInt16(input: UnsafePointer<Int16>, inStride: Int, pixels: Int, weights: UnsafePointer<Int16>,
                                      sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                                      bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                                      epilogue: NetworkKernels.Epilogue) {
        pointwiseInt8(input: UnsafeRawPointer(input), inStride: inStride, pixels: pixels, weights: UnsafeRawPointer(weights),
                      sumBase: sumBase, multipliers: multipliers, bias: bias, output: output, outStride: outStride,
                      epilogue: epilogue)
    }
}
