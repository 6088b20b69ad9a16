/// The kernels that move and combine activations without weights: pooling, resizing, the
/// residual add and channel padding.
extension NetworkKernels {
    /// 2x2 max pooling with stride 2 (SAME padding on an odd size repeats nothing: the missing
    /// pixels are left out, as TensorFlow does).
    @inlinable @inline(__always)
    public static func maxPool2x2(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                           output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        for oy in 0..<outHeight {
            let y0 = 2 * oy, y1 = min(2 * oy + 1, height - 1)
            for ox in 0..<outWidth {
                let x0 = 2 * ox, x1 = min(2 * ox + 1, width - 1)
                var ch = 0
                while ch < channels {
                    let a = load8(input + (y0 * width + x0) * channels + ch)
                    let b = load8(input + (y0 * width + x1) * channels + ch)
                    let c = load8(input + (y1 * width + x0) * channels + ch)
                    let d = load8(input + (y1 * width + x1) * channels + ch)
                    store8(max8(max8(a, b), max8(c, d)), output + (oy * outWidth + ox) * channels + ch)
                    ch += 8
                }
            }
        }
    }

    /// Where output position `d` of a bilinear resize reads, with half-pixel centres
    /// (TensorFlow's `half_pixel_centers=True`): source coordinate `(d + 0.5) * scale - 0.5`, its
    /// two neighbours clamped to the `size` source pixels, and the weight of the second. Every
    /// kernel set's resize reads through this, so all agree on every value.
    @inlinable @inline(__always)
    public static func bilinearSource(_ d: Int, scale: Float, size: Int) -> (low: Int, high: Int, weight: Float) {
        let f = (Float(d) + 0.5) * scale - 0.5
        let f0 = f.rounded(.down)
        return (max(Int(f0), 0), min(Int(f.rounded(.up)), size - 1), f - f0)
    }

    /// Bilinear resize with half-pixel centres (`bilinearSource`).
    @inlinable @inline(__always)
    public static func resizeBilinear(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                               output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        let sy = Float(height) / Float(outHeight), sx = Float(width) / Float(outWidth)
        for oy in 0..<outHeight {
            let (y0, y1, wy) = bilinearSource(oy, scale: sy, size: height)
            let ly = SIMD8<Float>(repeating: wy)
            for ox in 0..<outWidth {
                let (x0, x1, wx) = bilinearSource(ox, scale: sx, size: width)
                let lx = SIMD8<Float>(repeating: wx)
                var ch = 0
                while ch < channels {
                    store8(bilinear8(load8(input + (y0 * width + x0) * channels + ch), load8(input + (y0 * width + x1) * channels + ch),
                                     load8(input + (y1 * width + x0) * channels + ch), load8(input + (y1 * width + x1) * channels + ch),
                                     lx: lx, ly: ly),
                           output + (oy * outWidth + ox) * channels + ch)
                    ch += 8
                }
            }
        }
    }

    /// One bilinear sample of eight channels from its four neighbours: across each row, then
    /// between the rows, as multiplies and adds (never fused), so every set gets the same bits.
    @inlinable @inline(__always)
    public static func bilinear8(_ tl: SIMD8<Float>, _ tr: SIMD8<Float>, _ bl: SIMD8<Float>, _ br: SIMD8<Float>,
                                 lx: SIMD8<Float>, ly: SIMD8<Float>) -> SIMD8<Float> {
        let top = tl + (tr - tl) * lx
        let bottom = bl + (br - bl) * lx
        return top + (bottom - top) * ly
    }

    /// `output = a + b` over `pixels`, where `b` may have fewer (zero-padded) channels, then an
    /// optional ReLU.
    @inlinable @inline(__always)
    public static func add(_ a: UnsafePointer<Float>, aStride: Int, _ b: UnsafePointer<Float>, bStride: Int, pixels: Int,
                    output: UnsafeMutablePointer<Float>, relu: Bool) {
        for p in 0..<pixels {
            var ch = 0
            while ch < aStride {
                var v = load8(a + p * aStride + ch)
                if ch < bStride { v += load8(b + p * bStride + ch) }
                store8(relu ? relu8(v) : v, output + p * aStride + ch)
                ch += 8
            }
        }
    }

    /// Copies `pixels` pixels of `inStride` channels into a tensor of `outStride` channels starting
    /// at channel `before`; the other channels become zero.
    @inlinable @inline(__always)
    public static func padChannels(_ input: UnsafePointer<Float>, inStride: Int, pixels: Int, before: Int,
                            output: UnsafeMutablePointer<Float>, outStride: Int) {
        output.update(repeating: 0, count: pixels * outStride)
        for p in 0..<pixels {
            (output + p * outStride + before).update(from: input + p * inStride, count: min(inStride, outStride - before))
        }
    }
}
