import _Builtin_intrinsics.intel
import CNNKernels
import CNNKernelsAVX2

/// The 16-bit integer convolution with AVX-512 VNNI: one `vpdpwssd` multiplies two Int16 inputs
/// by two Int16 weights for sixteen channels and adds both products into each Int32 sum, exactly
/// (the caller bounds the weights so that no sum overflows), over the `pairs` layout the AVX2 set
/// reads with `vpmaddwd`: the same sums, so the same bits. Eight pixels by 32 channels per step
/// (sixteen sums in flight), then a last block of 16 eight pixels at a time.
///
/// Measured: LLVM (Swift 6.3.1, `icelake-server`) emits the unrolled loop's `vpdpwssd` as
/// `vpmaddwd` + `vpaddd` on 512-bit registers (only the tails keep `vpdpwssd`); on this AMD
/// processor (512-bit operations in two halves) the face descriptor runs 4.0 ms per face with this
/// set and with AVX2's, so the width buys nothing here yet.
extension AVX512Kernels {
    /// The AVX2 set's quantisation (its bits are the shared `quantizedLevels`).
    public static func quantizeInt16(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization, levels: Int32,
                                     output: UnsafeMutablePointer<Int16>) {
        AVX2Kernels.quantizeInt16(input, count: count, q, levels: levels, output: output)
    }

    public static func pointwiseInt16(input: UnsafePointer<Int16>, inStride: Int, pixels: Int, weights: UnsafePointer<Int16>,
                                      sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                                      bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                                      epilogue: NetworkKernels.Epilogue) {
        @inline(__always) func load512(_ p: UnsafeRawPointer) -> __m512i { p.loadUnaligned(as: __m512i.self) }
        @inline(__always) func pair(_ p: UnsafePointer<Int16>) -> __m512i {
            _mm512_set1_epi32(Int32(bitPattern: UnsafeRawPointer(p).loadUnaligned(as: UInt32.self)))
        }
        let block = NetworkKernels.int8Block
        var o = 0
        // Two blocks (32 channels) at a time, eight pixels per step: two weight vectors and eight
        // broadcasts feed sixteen `vpdpwssd`.
        while o + 2 * block <= outStride {
            let w = UnsafeRawPointer(weights + o * inStride)
            let base0 = load512(UnsafeRawPointer(sumBase + o)), base1 = load512(UnsafeRawPointer(sumBase + o + block))
            let f0 = Int8Epilogue(epilogue, channel: o, multipliers: multipliers, bias: bias, output: output, outStride: outStride)
            let f1 = Int8Epilogue(epilogue, channel: o + block, multipliers: multipliers, bias: bias, output: output, outStride: outStride)
            var p = 0
            while p + 8 <= pixels {
                var a0 = base0, a1 = base0, a2 = base0, a3 = base0, a4 = base0, a5 = base0, a6 = base0, a7 = base0
                var c0 = base1, c1 = base1, c2 = base1, c3 = base1, c4 = base1, c5 = base1, c6 = base1, c7 = base1
                let x0 = input + p * inStride
                var wi = w, wj = w + 2 * block * inStride
                var i = 0
                while i < inStride {
                    let k = load512(wi), l = load512(wj)
                    let x = x0 + i
                    var v = pair(x)
                    a0 = _mm512_dpwssd_epi32(a0, v, k); c0 = _mm512_dpwssd_epi32(c0, v, l)
                    v = pair(x + inStride)
                    a1 = _mm512_dpwssd_epi32(a1, v, k); c1 = _mm512_dpwssd_epi32(c1, v, l)
                    v = pair(x + 2 * inStride)
                    a2 = _mm512_dpwssd_epi32(a2, v, k); c2 = _mm512_dpwssd_epi32(c2, v, l)
                    v = pair(x + 3 * inStride)
                    a3 = _mm512_dpwssd_epi32(a3, v, k); c3 = _mm512_dpwssd_epi32(c3, v, l)
                    v = pair(x + 4 * inStride)
                    a4 = _mm512_dpwssd_epi32(a4, v, k); c4 = _mm512_dpwssd_epi32(c4, v, l)
                    v = pair(x + 5 * inStride)
                    a5 = _mm512_dpwssd_epi32(a5, v, k); c5 = _mm512_dpwssd_epi32(c5, v, l)
                    v = pair(x + 6 * inStride)
                    a6 = _mm512_dpwssd_epi32(a6, v, k); c6 = _mm512_dpwssd_epi32(c6, v, l)
                    v = pair(x + 7 * inStride)
                    a7 = _mm512_dpwssd_epi32(a7, v, k); c7 = _mm512_dpwssd_epi32(c7, v, l)
                    wi += 64; wj += 64
                    i += 2
                }
                f0.finish(a0, pixel: p); f1.finish(c0, pixel: p)
                f0.finish(a1, pixel: p + 1); f1.finish(c1, pixel: p + 1)
                f0.finish(a2, pixel: p + 2); f1.finish(c2, pixel: p + 2)
                f0.finish(a3, pixel: p + 3); f1.finish(c3, pixel: p + 3)
                f0.finish(a4, pixel: p + 4); f1.finish(c4, pixel: p + 4)
                f0.finish(a5, pixel: p + 5); f1.finish(c5, pixel: p + 5)
                f0.finish(a6, pixel: p + 6); f1.finish(c6, pixel: p + 6)
                f0.finish(a7, pixel: p + 7); f1.finish(c7, pixel: p + 7)
                p += 8
            }
            while p < pixels {
                var a0 = base0, c0 = base1
                let x0 = input + p * inStride
                var wi = w, wj = w + 2 * block * inStride
                var i = 0
                while i < inStride {
                    let v = pair(x0 + i)
                    a0 = _mm512_dpwssd_epi32(a0, v, load512(wi))
                    c0 = _mm512_dpwssd_epi32(c0, v, load512(wj))
                    wi += 64; wj += 64
                    i += 2
                }
                f0.finish(a0, pixel: p)
                f1.finish(c0, pixel: p)
                p += 1
            }
            o += 2 * block
        }
        // One block left (16 channels, or 8 where the tensor has only 8 more: the block's other
        // lanes are zero weights, so their sums are never stored).
        while o < outStride {
            let w = UnsafeRawPointer(weights + o * inStride)
            let base = load512(UnsafeRawPointer(sumBase + o))
            let f0 = Int8Epilogue(epilogue, channel: o, multipliers: multipliers, bias: bias, output: output, outStride: outStride)
            var p = 0
            while p + 8 <= pixels {
                var a0 = base, a1 = base, a2 = base, a3 = base, a4 = base, a5 = base, a6 = base, a7 = base
                let x0 = input + p * inStride
                var wi = w
                var i = 0
                while i < inStride {
                    let k = load512(wi)
                    let x = x0 + i
                    a0 = _mm512_dpwssd_epi32(a0, pair(x), k)
                    a1 = _mm512_dpwssd_epi32(a1, pair(x + inStride), k)
                    a2 = _mm512_dpwssd_epi32(a2, pair(x + 2 * inStride), k)
                    a3 = _mm512_dpwssd_epi32(a3, pair(x + 3 * inStride), k)
                    a4 = _mm512_dpwssd_epi32(a4, pair(x + 4 * inStride), k)
                    a5 = _mm512_dpwssd_epi32(a5, pair(x + 5 * inStride), k)
                    a6 = _mm512_dpwssd_epi32(a6, pair(x + 6 * inStride), k)
                    a7 = _mm512_dpwssd_epi32(a7, pair(x + 7 * inStride), k)
                    wi += 64
                    i += 2
                }
                f0.finish(a0, pixel: p); f0.finish(a1, pixel: p + 1)
                f0.finish(a2, pixel: p + 2); f0.finish(a3, pixel: p + 3)
                f0.finish(a4, pixel: p + 4); f0.finish(a5, pixel: p + 5)
                f0.finish(a6, pixel: p + 6); f0.finish(a7, pixel: p + 7)
                p += 8
            }
            while p < pixels {
                var a0 = base
                let x0 = input + p * inStride
                var wi = w
                var i = 0
                while i < inStride {
                    a0 = _mm512_dpwssd_epi32(a0, pair(x0 + i), load512(wi))
                    wi += 64
                    i += 2
                }
                f0.finish(a0, pixel: p)
                p += 1
            }
            o += block
        }
    }
}
