import _Builtin_intrinsics.intel
import CNNKernels

/// The int8 1x1 convolution with AVX-512 VNNI (`quads` layout): one `vpdpbusd` multiplies four
/// UInt8 inputs by four Int8 weights for sixteen channels and adds the four products into each
/// Int32 sum, exactly (four products of 255 x 127 cannot overflow). Eight pixels by 32 channels
/// per step (sixteen sums in flight), then a last block of 16 eight pixels at a time.
extension AVX512Kernels {
    public static let int8Layout = NetworkKernels.Int8Layout.quads

    /// The depthwise kernel (`depthwise16`) writing quantised bytes.
    public static func depthwise3x3Quantized(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                             stride: Int, padTop: Int, padLeft: Int,
                                             weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                             output: UnsafeMutableRawPointer, outHeight: Int, outWidth: Int, relu: Bool,
                                             quantization: NetworkKernels.Quantization) {
        depthwise16(input: input, height: height, width: width, channels: channels, stride: stride,
                    padTop: padTop, padLeft: padLeft, weights: weights, bias: bias, output: output,
                    outHeight: outHeight, outWidth: outWidth, relu: relu, quantization: quantization)
    }

    /// Sixteen at a time through integers (`Quantizer`: the shared quantisation's bytes), the
    /// last eight as eight.
    public static func quantize(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization,
                                output: UnsafeMutableRawPointer) {
        let quantizer = Quantizer(q)
        var i = 0
        while i + 16 <= count {
            SIMD16<Float>.at(input + i).store(output, i, quantizer)
            i += 16
        }
        while i < count {
            SIMD8<Float>.at(input + i).store(output, i, quantizer)
            i += 8
        }
    }

    public static func pointwiseInt8(input: UnsafeRawPointer, inStride: Int, pixels: Int, weights: UnsafeRawPointer,
                                     sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                                     bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                                     epilogue: NetworkKernels.Epilogue) {
        @inline(__always) func load512(_ p: UnsafeRawPointer) -> __m512i { p.loadUnaligned(as: __m512i.self) }
        @inline(__always) func quad(_ p: UnsafeRawPointer) -> __m512i {
            _mm512_set1_epi32(Int32(bitPattern: p.loadUnaligned(as: UInt32.self)))
        }
        var o = 0
        // Two blocks (32 channels) at a time, eight pixels per step: two weight vectors and eight
        // broadcasts feed sixteen `vpdpbusd`.
        while o + 32 <= outStride {
            let w = weights + o * inStride
            let base0 = load512(UnsafeRawPointer(sumBase + o)), base1 = load512(UnsafeRawPointer(sumBase + o + 16))
            let f0 = Int8Epilogue(epilogue, channel: o, multipliers: multipliers, bias: bias, output: output, outStride: outStride)
            let f1 = Int8Epilogue(epilogue, channel: o + 16, multipliers: multipliers, bias: bias, output: output, outStride: outStride)
            var p = 0
            while p + 8 <= pixels {
                var a0 = base0, a1 = base0, a2 = base0, a3 = base0, a4 = base0, a5 = base0, a6 = base0, a7 = base0
                var c0 = base1, c1 = base1, c2 = base1, c3 = base1, c4 = base1, c5 = base1, c6 = base1, c7 = base1
                let x0 = input + p * inStride
                var wi = w, wj = w + 16 * inStride
                var i = 0
                while i < inStride {
                    let k = load512(wi), l = load512(wj)
                    let x = x0 + i
                    var v = quad(x)
                    a0 = _mm512_dpbusd_epi32(a0, v, k); c0 = _mm512_dpbusd_epi32(c0, v, l)
                    v = quad(x + inStride)
                    a1 = _mm512_dpbusd_epi32(a1, v, k); c1 = _mm512_dpbusd_epi32(c1, v, l)
                    v = quad(x + 2 * inStride)
                    a2 = _mm512_dpbusd_epi32(a2, v, k); c2 = _mm512_dpbusd_epi32(c2, v, l)
                    v = quad(x + 3 * inStride)
                    a3 = _mm512_dpbusd_epi32(a3, v, k); c3 = _mm512_dpbusd_epi32(c3, v, l)
                    v = quad(x + 4 * inStride)
                    a4 = _mm512_dpbusd_epi32(a4, v, k); c4 = _mm512_dpbusd_epi32(c4, v, l)
                    v = quad(x + 5 * inStride)
                    a5 = _mm512_dpbusd_epi32(a5, v, k); c5 = _mm512_dpbusd_epi32(c5, v, l)
                    v = quad(x + 6 * inStride)
                    a6 = _mm512_dpbusd_epi32(a6, v, k); c6 = _mm512_dpbusd_epi32(c6, v, l)
                    v = quad(x + 7 * inStride)
                    a7 = _mm512_dpbusd_epi32(a7, v, k); c7 = _mm512_dpbusd_epi32(c7, v, l)
                    wi += 64; wj += 64
                    i += 4
                }
                f0.finish(a0, pixel: p)
                f1.finish(c0, pixel: p)
                f0.finish(a1, pixel: p + 1)
                f1.finish(c1, pixel: p + 1)
                f0.finish(a2, pixel: p + 2)
                f1.finish(c2, pixel: p + 2)
                f0.finish(a3, pixel: p + 3)
                f1.finish(c3, pixel: p + 3)
                f0.finish(a4, pixel: p + 4)
                f1.finish(c4, pixel: p + 4)
                f0.finish(a5, pixel: p + 5)
                f1.finish(c5, pixel: p + 5)
                f0.finish(a6, pixel: p + 6)
                f1.finish(c6, pixel: p + 6)
                f0.finish(a7, pixel: p + 7)
                f1.finish(c7, pixel: p + 7)
                p += 8
            }
            while p < pixels {
                var a0 = base0, c0 = base1
                let x0 = input + p * inStride
                var wi = w, wj = w + 16 * inStride
                var i = 0
                while i < inStride {
                    let v = quad(x0 + i)
                    a0 = _mm512_dpbusd_epi32(a0, v, load512(wi))
                    c0 = _mm512_dpbusd_epi32(c0, v, load512(wj))
                    wi += 64; wj += 64
                    i += 4
                }
                f0.finish(a0, pixel: p)
                f1.finish(c0, pixel: p)
                p += 1
            }
            o += 32
        }
        // One block left (16 channels, or 8 where the tensor has only 8 more: the block's other
        // lanes are zero weights, so their sums are never stored).
        while o < outStride {
            let w = weights + o * inStride
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
                    a0 = _mm512_dpbusd_epi32(a0, quad(x), k)
                    a1 = _mm512_dpbusd_epi32(a1, quad(x + inStride), k)
                    a2 = _mm512_dpbusd_epi32(a2, quad(x + 2 * inStride), k)
                    a3 = _mm512_dpbusd_epi32(a3, quad(x + 3 * inStride), k)
                    a4 = _mm512_dpbusd_epi32(a4, quad(x + 4 * inStride), k)
                    a5 = _mm512_dpbusd_epi32(a5, quad(x + 5 * inStride), k)
                    a6 = _mm512_dpbusd_epi32(a6, quad(x + 6 * inStride), k)
                    a7 = _mm512_dpbusd_epi32(a7, quad(x + 7 * inStride), k)
                    wi += 64
                    i += 4
                }
                f0.finish(a0, pixel: p)
                f0.finish(a1, pixel: p + 1)
                f0.finish(a2, pixel: p + 2)
                f0.finish(a3, pixel: p + 3)
                f0.finish(a4, pixel: p + 4)
                f0.finish(a5, pixel: p + 5)
                f0.finish(a6, pixel: p + 6)
                f0.finish(a7, pixel: p + 7)
                p += 8
            }
            while p < pixels {
                var a0 = base
                let x0 = input + p * inStride
                var wi = w
                var i = 0
                while i < inStride {
                    a0 = _mm512_dpbusd_epi32(a0, quad(x0 + i), load512(wi))
                    wi += 64
                    i += 4
                }
                f0.finish(a0, pixel: p)
                p += 1
            }
            o += NetworkKernels.int8Block
        }
    }

    /// The Int32 sums of a block turned into Floats (`Float(sum) * multiplier + bias`, a multiply
    /// and an add as `NetworkKernels.finishInt8`), then the block's epilogue.
    struct Int8Epilogue {
        let multipliers: SIMD16<Float>
        let bias: SIMD16<Float>
        let epilogue: BlockEpilogue

        @inline(__always)
        init(_ epilogue: NetworkKernels.Epilogue, channel o: Int, multipliers: UnsafePointer<Float>, bias: UnsafePointer<Float>,
             output: UnsafeMutablePointer<Float>, outStride: Int) {
            self.multipliers = UnsafeRawPointer(multipliers + o).loadUnaligned(as: SIMD16<Float>.self)
            self.bias = UnsafeRawPointer(bias + o).loadUnaligned(as: SIMD16<Float>.self)
            self.epilogue = BlockEpilogue(epilogue, channel: o, output: output, outStride: outStride)
        }

        @inline(__always)
        func finish(_ sums: __m512i, pixel p: Int) {
            epilogue.store(_mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sums), multipliers), bias), pixel: p)
        }
    }
}
