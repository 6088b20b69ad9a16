import _Builtin_intrinsics.intel
import CNNKernels

/// The steps that move data rather than multiply it, sixteen channels at a time where the tensor
/// has them (BlazeFace's pooled and resized tensors have 32 to 256 channels), the last 8 as the
/// shared 8-wide kernels do. Each value is the same operations in the same order (a max of four;
/// `tl + (tr - tl) * lx`, then the same between rows, as multiplies and adds, never fused), so
/// the bits are the AVX2 set's.
extension AVX512Kernels {
    @inline(__always)
    static func store16(_ v: SIMD16<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD16<Float>.self)
    }

    static func maxPool16(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                          output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        for oy in 0..<outHeight {
            let y0 = 2 * oy, y1 = min(2 * oy + 1, height - 1)
            for ox in 0..<outWidth {
                let x0 = 2 * ox, x1 = min(2 * ox + 1, width - 1)
                let a = input + (y0 &* width &+ x0) &* channels, b = input + (y0 &* width &+ x1) &* channels
                let c = input + (y1 &* width &+ x0) &* channels, d = input + (y1 &* width &+ x1) &* channels
                let y = output + (oy &* outWidth &+ ox) &* channels
                var ch = 0
                // `max8`'s blend: the first operand unless it is smaller, so vmaxps with the
                // operands swapped (it returns the second when they are equal).
                @inline(__always) func larger(_ p: SIMD16<Float>, _ q: SIMD16<Float>) -> SIMD16<Float> { _mm512_max_ps(q, p) }
                while ch + 16 <= channels {
                    store16(larger(larger(load16(a + ch), load16(b + ch)), larger(load16(c + ch), load16(d + ch))), y + ch)
                    ch += 16
                }
                if ch < channels {
                    let m = NetworkKernels.max8(NetworkKernels.max8(NetworkKernels.load8(a + ch), NetworkKernels.load8(b + ch)),
                                                NetworkKernels.max8(NetworkKernels.load8(c + ch), NetworkKernels.load8(d + ch)))
                    NetworkKernels.store8(m, y + ch)
                }
            }
        }
    }

    static func resizeBilinear16(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                 output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        let sy = Float(height) / Float(outHeight), sx = Float(width) / Float(outWidth)
        for oy in 0..<outHeight {
            let (y0, y1, wy) = NetworkKernels.bilinearSource(oy, scale: sy, size: height)
            for ox in 0..<outWidth {
                let (x0, x1, wx) = NetworkKernels.bilinearSource(ox, scale: sx, size: width)
                let tl = input + (y0 &* width &+ x0) &* channels, tr = input + (y0 &* width &+ x1) &* channels
                let bl = input + (y1 &* width &+ x0) &* channels, br = input + (y1 &* width &+ x1) &* channels
                let y = output + (oy &* outWidth &+ ox) &* channels
                let lx = _mm512_set1_ps(wx), ly = _mm512_set1_ps(wy)
                @inline(__always) func lerp(_ a: SIMD16<Float>, _ b: SIMD16<Float>, _ t: SIMD16<Float>) -> SIMD16<Float> {
                    _mm512_add_ps(a, _mm512_mul_ps(_mm512_sub_ps(b, a), t))
                }
                var ch = 0
                while ch + 16 <= channels {
                    let top = lerp(load16(tl + ch), load16(tr + ch), lx)
                    let bottom = lerp(load16(bl + ch), load16(br + ch), lx)
                    store16(lerp(top, bottom, ly), y + ch)
                    ch += 16
                }
                if ch < channels {
                    NetworkKernels.store8(NetworkKernels.bilinear8(NetworkKernels.load8(tl + ch), NetworkKernels.load8(tr + ch),
                                                                   NetworkKernels.load8(bl + ch), NetworkKernels.load8(br + ch),
                                                                   lx: SIMD8(repeating: wx), ly: SIMD8(repeating: wy)), y + ch)
                }
            }
        }
    }
}
