import _Builtin_intrinsics.intel
import CNNKernels

/// The general convolution (the network's first layer, 3x3 stride 2 over RGB into 32 channels) 32 channels
/// at a time in two ZMM vectors: per tap, four pixels' broadcasts feed eight 16-wide
/// `vfmadd231ps`, where the AVX2 set needs sixteen 8-wide ones. Each output channel is the same
/// chain (bias, then the taps in kernel order, fused) as the AVX2 set's, so the bits are the
/// same; the patches come from the shared `NetworkKernels.convolutionSteps`, and channels past the
/// last 32 from the shared `convolutionChannels`. The plan packs weights in blocks of 8 channels;
/// each call first interleaves every 32 channels' into one run of 32 per tap (a 3x3 convolution of
/// 3 inputs into 32 channels: 3.4 KB), so a tap is two plain loads instead of four loads and two
/// joins, which took the shuffle port the FMAs share (at 448x448, alternating runs on a busy
/// machine: the step's medians 0.57-1.03 ms before, 0.56-0.83 after).
extension AVX512Kernels {
    static func convolution16(input: UnsafePointer<Float>, height: Int, width: Int, inChannels: Int,
                              kernel: Int, stride: Int, padTop: Int, padLeft: Int,
                              weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                              output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, outStride: Int,
                              relu: Bool, patch: UnsafeMutablePointer<Float>) {
        let floor = SIMD16<Float>(repeating: relu ? 0 : -.infinity)
        let patchLength = kernel * kernel * inChannels, blocks = outStride / 32
        withUnsafeTemporaryAllocation(of: Float.self, capacity: max(1, blocks * 32 * patchLength)) { buffer in
            // Channels o..<o+32 of tap t at ((o / 32) * patchLength + t) * 32: from four blocks of 8.
            let interleaved = buffer.baseAddress!
            for block in 0..<blocks {
                for t in 0..<patchLength {
                    for quarter in 0..<4 {
                        let from = weights + ((4 * block + quarter) * patchLength + t) * 8
                        (interleaved + (block * patchLength + t) * 32 + quarter * 8).update(from: from, count: 8)
                    }
                }
            }
            NetworkKernels.convolutionSteps(input: input, height: height, width: width, inChannels: inChannels, kernel: kernel,
                                            stride: stride, padTop: padTop, padLeft: padLeft, outHeight: outHeight,
                                            outWidth: outWidth, patch: patch) { step in
                let rowLength = step.rowLength, rowStep = step.rowStep, n = step.pixels
                let x0 = step.source, x1 = x0 + step.pixelStep, x2 = x1 + step.pixelStep, x3 = x2 + step.pixelStep
                let y = output + step.first &* outStride
                @inline(__always)
                func put(_ v: SIMD16<Float>, _ pixel: Int, _ o: Int) {
                    UnsafeMutableRawPointer(y + (pixel &* outStride &+ o)).storeBytes(of: _mm512_max_ps(floor, v), as: SIMD16<Float>.self)
                }
                var o = 0
                while o + 32 <= outStride {
                    let b0 = load16(bias + o), b1 = load16(bias + (o + 16))
                    var a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1
                    var w = UnsafePointer(interleaved) + o &* patchLength
                    for ky in 0..<step.kernel {
                        let r = ky &* rowStep
                        for i in 0..<rowLength {
                            let k0 = load16(w), k1 = load16(w + 16)
                            let v0 = _mm512_set1_ps(x0[r &+ i]), v1 = _mm512_set1_ps(x1[r &+ i])
                            let v2 = _mm512_set1_ps(x2[r &+ i]), v3 = _mm512_set1_ps(x3[r &+ i])
                            a00 = _mm512_fmadd_ps(v0, k0, a00); a01 = _mm512_fmadd_ps(v0, k1, a01)
                            a10 = _mm512_fmadd_ps(v1, k0, a10); a11 = _mm512_fmadd_ps(v1, k1, a11)
                            a20 = _mm512_fmadd_ps(v2, k0, a20); a21 = _mm512_fmadd_ps(v2, k1, a21)
                            a30 = _mm512_fmadd_ps(v3, k0, a30); a31 = _mm512_fmadd_ps(v3, k1, a31)
                            w += 32
                        }
                    }
                    put(a00, 0, o); put(a01, 0, o + 16)
                    if n > 1 { put(a10, 1, o); put(a11, 1, o + 16) }
                    if n > 2 { put(a20, 2, o); put(a21, 2, o + 16) }
                    if n > 3 { put(a30, 3, o); put(a31, 3, o + 16) }
                    o += 32
                }
                if o < outStride {
                    NetworkKernels.convolutionChannels(step, from: o, weights: weights, bias: bias, output: output,
                                                       outStride: outStride, relu: relu, NetworkKernels.FusedMultiplyAdd.self)
                }
            }
        }
    }
}
