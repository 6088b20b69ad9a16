import _Builtin_intrinsics.intel
import CNNKernels

/// The int8 1x1 convolution with AVX2 (`pairs` layout): activations and weights as Int16,
/// `vpmaddwd` multiplies two inputs of eight channels and sums each pair exactly into Int32.
/// Four pixels by sixteen channels per step, eight sums in flight.
extension AVX2Kernels {
    public static let int8Layout = NetworkKernels.Int8Layout.pairs

    public static func depthwise3x3Quantized(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                             stride: Int, padTop: Int, padLeft: Int,
                                             weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                             output: UnsafeMutableRawPointer, outHeight: Int, outWidth: Int, relu: Bool,
                                             quantization: NetworkKernels.Quantization) {
        NetworkKernels.depthwise3x3(input: input, height: height, width: width, channels: channels, stride: stride,
                                    padTop: padTop, padLeft: padLeft, weights: weights, bias: bias, output: output,
                                    outHeight: outHeight, outWidth: outWidth, relu: relu, NetworkKernels.FusedMultiplyAdd.self,
                                    PairStore.self, quantization: quantization)
    }

    /// A depthwise store of quantised Int16 activations: a saturating pack and a permute put the
    /// eight values in the low 16 bytes (the shared lane-by-lane store doubled an inference's time).
    enum PairStore: NetworkKernels.DepthwiseStore {
        @inline(__always)
        static func store(_ v: SIMD8<Float>, _ output: UnsafeMutableRawPointer, _ index: Int, _ q: NetworkKernels.Quantization?) {
            guard let q else { return }
            let x = NetworkKernels.quantized8(v, inverse: SIMD8(repeating: 1 / q.scale), zero: SIMD8(repeating: Float(q.zeroPoint)))
            let i32 = _mm256_cvtps_epi32(x)
            let w16 = _mm256_packus_epi32(i32, i32)
            let gathered = _mm256_permutevar8x32_epi32(w16, _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5))
            let words = unsafeBitCast(gathered, to: SIMD4<UInt64>.self)
            (output + 2 * index).storeBytes(of: SIMD2(words[0], words[1]), as: SIMD2<UInt64>.self)
        }
    }

    public static func quantize(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization,
                                output: UnsafeMutableRawPointer) {
        // Sixteen at a time: two rounding-exact converts, a saturating pack (values are already
        // 0...255) and a permute to undo the pack's interleaving of the 128-bit halves.
        let inverse = SIMD8<Float>(repeating: 1 / q.scale), zero = SIMD8<Float>(repeating: Float(q.zeroPoint))
        let order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)
        var i = 0
        while i + 16 <= count {
            let a = NetworkKernels.quantized8(NetworkKernels.load8(input + i), inverse: inverse, zero: zero)
            let b = NetworkKernels.quantized8(NetworkKernels.load8(input + i + 8), inverse: inverse, zero: zero)
            let packed = _mm256_packus_epi32(_mm256_cvtps_epi32(a),
                                             _mm256_cvtps_epi32(b))
            (output + 2 * i).storeBytes(of: _mm256_permutevar8x32_epi32(packed, order), as: __m256i.self)
            i += 16
        }
        if i < count {
            NetworkKernels.quantizePairs(input + i, count: count - i, q, output: (output + 2 * i).assumingMemoryBound(to: Int16.self))
        }
    }

    public static func pointwiseInt8(input: UnsafeRawPointer, inStride: Int, pixels: Int, weights: UnsafeRawPointer,
                                     sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                                     bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                                     epilogue: NetworkKernels.Epilogue) {
        let x = input.assumingMemoryBound(to: Int16.self)
        @inline(__always) func load256(_ p: UnsafeRawPointer) -> __m256i { p.loadUnaligned(as: __m256i.self) }
        @inline(__always) func pair(_ p: UnsafePointer<Int16>) -> __m256i {
            _mm256_set1_epi32(Int32(bitPattern: UnsafeRawPointer(p).loadUnaligned(as: UInt32.self)))
        }
        @inline(__always) func sums(_ lo: __m256i, _ hi: __m256i) -> SIMD16<Float> {
            let a = _mm256_cvtepi32_ps(lo)
            let b = _mm256_cvtepi32_ps(hi)
            return SIMD16(lowHalf: a, highHalf: b)
        }
        var o = 0
        while o < outStride {
            let w = weights + o * inStride * 2
            let base = UnsafeRawPointer(sumBase + o)
            let b0 = load256(base), b1 = load256(base + 32)
            var p = 0
            while p + 4 <= pixels {
                var a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1
                let x0 = x + p * inStride, x1 = x0 + inStride, x2 = x1 + inStride, x3 = x2 + inStride
                var wi = w
                var i = 0
                while i < inStride {
                    let w0 = load256(wi), w1 = load256(wi + 32)
                    let v0 = pair(x0 + i), v1 = pair(x1 + i), v2 = pair(x2 + i), v3 = pair(x3 + i)
                    a00 = _mm256_add_epi32(a00, _mm256_madd_epi16(v0, w0)); a01 = _mm256_add_epi32(a01, _mm256_madd_epi16(v0, w1))
                    a10 = _mm256_add_epi32(a10, _mm256_madd_epi16(v1, w0)); a11 = _mm256_add_epi32(a11, _mm256_madd_epi16(v1, w1))
                    a20 = _mm256_add_epi32(a20, _mm256_madd_epi16(v2, w0)); a21 = _mm256_add_epi32(a21, _mm256_madd_epi16(v2, w1))
                    a30 = _mm256_add_epi32(a30, _mm256_madd_epi16(v3, w0)); a31 = _mm256_add_epi32(a31, _mm256_madd_epi16(v3, w1))
                    wi += 64
                    i += 2
                }
                NetworkKernels.finishInt8(sums(a00, a01), multipliers: multipliers, bias: bias, output: output,
                                          outStride: outStride, pixel: p, channel: o, epilogue: epilogue)
                NetworkKernels.finishInt8(sums(a10, a11), multipliers: multipliers, bias: bias, output: output,
                                          outStride: outStride, pixel: p + 1, channel: o, epilogue: epilogue)
                NetworkKernels.finishInt8(sums(a20, a21), multipliers: multipliers, bias: bias, output: output,
                                          outStride: outStride, pixel: p + 2, channel: o, epilogue: epilogue)
                NetworkKernels.finishInt8(sums(a30, a31), multipliers: multipliers, bias: bias, output: output,
                                          outStride: outStride, pixel: p + 3, channel: o, epilogue: epilogue)
                p += 4
            }
            while p < pixels {
                var a0 = b0, a1 = b1
                let x0 = x + p * inStride
                var wi = w
                var i = 0
                while i < inStride {
                    let v0 = pair(x0 + i)
                    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(v0, load256(wi)))
                    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(v0, load256(wi + 32)))
                    wi += 64
                    i += 2
                }
                NetworkKernels.finishInt8(sums(a0, a1), multipliers: multipliers, bias: bias, output: output,
                                          outStride: outStride, pixel: p, channel: o, epilogue: epilogue)
                p += 1
            }
            o += NetworkKernels.int8Block
        }
    }
}
