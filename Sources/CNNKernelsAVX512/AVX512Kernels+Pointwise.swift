import CNNKernels

/// The Float 1x1 convolution sixteen channels wide: the packed weights' blocks of 16 output
/// channels are one ZMM vector per input channel, so a step of eight pixels is one weight load,
/// eight broadcasts and eight `vfmadd231ps` on 512-bit vectors. A last block of 8 channels runs
/// the shared 8-wide kernel.
extension AVX512Kernels {
    @inline(__always)
    static func load16(_ p: UnsafePointer<Float>) -> SIMD16<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Float>.self)
    }

    static func pointwise16(input: UnsafePointer<Float>, inStride: Int, pixels: Int,
                            weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                            output: UnsafeMutablePointer<Float>, outStride: Int, epilogue: NetworkKernels.Epilogue) {
        var o = 0
        while o + 16 <= outStride {
            let w = weights + o * inStride
            let b = load16(bias + o)
            let e = BlockEpilogue(epilogue, channel: o, output: output, outStride: outStride)
            var p = 0
            while p + 8 <= pixels {
                var a0 = b, a1 = b, a2 = b, a3 = b, a4 = b, a5 = b, a6 = b, a7 = b
                let x0 = input + p * inStride
                var wi = w
                for i in 0..<inStride {
                    let k = load16(wi)
                    let x = x0 + i
                    a0 = a0.addingProduct(SIMD16(repeating: x[0]), k)
                    a1 = a1.addingProduct(SIMD16(repeating: x[inStride]), k)
                    a2 = a2.addingProduct(SIMD16(repeating: x[2 * inStride]), k)
                    a3 = a3.addingProduct(SIMD16(repeating: x[3 * inStride]), k)
                    a4 = a4.addingProduct(SIMD16(repeating: x[4 * inStride]), k)
                    a5 = a5.addingProduct(SIMD16(repeating: x[5 * inStride]), k)
                    a6 = a6.addingProduct(SIMD16(repeating: x[6 * inStride]), k)
                    a7 = a7.addingProduct(SIMD16(repeating: x[7 * inStride]), k)
                    wi += 16
                }
                e.store(a0, pixel: p); e.store(a1, pixel: p + 1)
                e.store(a2, pixel: p + 2); e.store(a3, pixel: p + 3)
                e.store(a4, pixel: p + 4); e.store(a5, pixel: p + 5)
                e.store(a6, pixel: p + 6); e.store(a7, pixel: p + 7)
                p += 8
            }
            while p < pixels {
                var a0 = b
                let x = input + p * inStride
                var wi = w
                for i in 0..<inStride {
                    a0 = a0.addingProduct(SIMD16(repeating: x[i]), load16(wi))
                    wi += 16
                }
                e.store(a0, pixel: p)
                p += 1
            }
            o += 16
        }
        if o < outStride {  // a last block of 8 channels, eight pixels at a time
            let w = weights + o * inStride
            let b = NetworkKernels.load8(bias + o)
            var p = 0
            while p + 8 <= pixels {
                var a0 = b, a1 = b, a2 = b, a3 = b, a4 = b, a5 = b, a6 = b, a7 = b
                let x0 = input + p * inStride
                var wi = w
                for i in 0..<inStride {
                    let k = NetworkKernels.load8(wi)
                    let x = x0 + i
                    a0 = a0.addingProduct(SIMD8(repeating: x[0]), k)
                    a1 = a1.addingProduct(SIMD8(repeating: x[inStride]), k)
                    a2 = a2.addingProduct(SIMD8(repeating: x[2 * inStride]), k)
                    a3 = a3.addingProduct(SIMD8(repeating: x[3 * inStride]), k)
                    a4 = a4.addingProduct(SIMD8(repeating: x[4 * inStride]), k)
                    a5 = a5.addingProduct(SIMD8(repeating: x[5 * inStride]), k)
                    a6 = a6.addingProduct(SIMD8(repeating: x[6 * inStride]), k)
                    a7 = a7.addingProduct(SIMD8(repeating: x[7 * inStride]), k)
                    wi += 8
                }
                finish8(a0, output, outStride, p, o, epilogue); finish8(a1, output, outStride, p + 1, o, epilogue); finish8(a2, output, outStride, p + 2, o, epilogue); finish8(a3, output, outStride, p + 3, o, epilogue)
                finish8(a4, output, outStride, p + 4, o, epilogue); finish8(a5, output, outStride, p + 5, o, epilogue); finish8(a6, output, outStride, p + 6, o, epilogue); finish8(a7, output, outStride, p + 7, o, epilogue)
                p += 8
            }
            while p < pixels {
                var a0 = b
                let x = input + p * inStride
                var wi = w
                for i in 0..<inStride {
                    a0 = a0.addingProduct(SIMD8(repeating: x[i]), NetworkKernels.load8(wi))
                    wi += 8
                }
                finish8(a0, output, outStride, p, o, epilogue)
                p += 1
            }
        }
    }

    @_transparent
    static func finish8(_ v: SIMD8<Float>, _ output: UnsafeMutablePointer<Float>, _ outStride: Int, _ p: Int, _ o: Int,
                        _ epilogue: NetworkKernels.Epilogue) {
        NetworkKernels.store8(epilogue.apply(v, pixel: p, channel: o), output + p * outStride + o)
    }
}
