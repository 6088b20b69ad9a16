/// The descriptor network's cheap steps (pooling, the zero-padding residual add, global average
/// pooling, the fully connected layer), written once in plain `SIMD8` Swift and compiled for the
/// baseline target only: every kernel set calls this same code, so these steps give the same bits
/// whichever set runs the convolutions. Tensors are NHWC with channel counts that are multiples of
/// 8 (32 to 256 here).
enum EmbeddingKernels {
    @inline(__always)
    static func load8(_ p: UnsafePointer<Float>) -> SIMD8<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
    }

    @inline(__always)
    static func store8(_ v: SIMD8<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD8<Float>.self)
    }

    /// `size`x`size` max pooling with `stride`, no padding (dlib's `max_pool<3,3,2,2>`): every window
    /// lies inside the input.
    static func maxPool(_ input: UnsafePointer<Float>, height: Int, width: Int, channels: Int, size: Int, stride: Int,
                        output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        for oy in 0..<outHeight {
            for ox in 0..<outWidth {
                let y = output + (oy * outWidth + ox) * channels
                var c = 0
                while c < channels {
                    var m = load8(input + ((oy * stride) * width + ox * stride) * channels + c)
                    for ky in 0..<size {
                        for kx in 0..<size {
                            let v = load8(input + ((oy * stride + ky) * width + ox * stride + kx) * channels + c)
                            m = m.replacing(with: v, where: v .> m)  // pointwiseMax is an out-of-line call here
                        }
                    }
                    store8(m, y + c)
                    c += 8
                }
            }
        }
    }

    /// 2x2 average pooling with stride 2, no padding (dlib's `avg_pool<2,2,2,2>`, the downsampling
    /// blocks' skip): an odd last row or column is left out, as dlib leaves it.
    static func averagePool2x2(_ input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                               output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        let quarter = SIMD8<Float>(repeating: 0.25)
        for oy in 0..<outHeight {
            for ox in 0..<outWidth {
                let a = input + ((2 * oy) * width + 2 * ox) * channels, b = a + width * channels
                let y = output + (oy * outWidth + ox) * channels
                var c = 0
                while c < channels {
                    let sum = (load8(a + c) + load8(a + channels + c)) + (load8(b + c) + load8(b + channels + c))
                    store8(sum * quarter, y + c)
                    c += 8
                }
            }
        }
    }

    /// A tensor's height, width and channels.
    struct Shape: Equatable {
        var height: Int
        var width: Int
        var channels: Int
        var floats: Int { height * width * channels }
    }

    /// `a + b` into `output` of the larger of each dimension, each operand read as zero past its
    /// own end (dlib's `add_prev` on tensors of different shapes: the residual of a downsampling
    /// block, whose 2x2 pooled skip can be a row and column larger and has half the channels), then
    /// ReLU.
    static func addZeroPadded(_ a: UnsafePointer<Float>, _ aShape: Shape, _ b: UnsafePointer<Float>, _ bShape: Shape,
                              output: UnsafeMutablePointer<Float>, _ shape: Shape, relu: Bool) {
        let zero = SIMD8<Float>(repeating: 0)
        for y in 0..<shape.height {
            for x in 0..<shape.width {
                let inA = y < aShape.height && x < aShape.width, inB = y < bShape.height && x < bShape.width
                let pa = a + (y * aShape.width + x) * aShape.channels, pb = b + (y * bShape.width + x) * bShape.channels
                let out = output + (y * shape.width + x) * shape.channels
                var c = 0
                while c < shape.channels {
                    let va = inA && c < aShape.channels ? load8(pa + c) : zero
                    let vb = inB && c < bShape.channels ? load8(pb + c) : zero
                    let sum = va + vb
                    store8(relu ? sum.replacing(with: 0, where: sum .< 0) : sum, out + c)
                    c += 8
                }
            }
        }
    }

    /// Global average pooling: each channel's mean over the `pixels` pixels, summed in pixel order.
    static func mean(_ input: UnsafePointer<Float>, pixels: Int, channels: Int, output: UnsafeMutablePointer<Float>) {
        let scale = SIMD8<Float>(repeating: 1 / Float(pixels))
        var c = 0
        while c < channels {
            var sum = SIMD8<Float>(repeating: 0)
            for p in 0..<pixels { sum += load8(input + p * channels + c) }
            store8(sum * scale, output + c)
            c += 8
        }
    }

    /// A fully connected layer without bias: `output[o]` is the dot product of `weights` row `o`
    /// (`inputs` values) with `input`, summed 8 lanes wide and then across the lanes in a fixed order.
    static func fullyConnected(_ input: UnsafePointer<Float>, inputs: Int, weights: UnsafePointer<Float>, outputs: Int,
                               output: UnsafeMutablePointer<Float>) {
        for o in 0..<outputs {
            let row = weights + o * inputs
            var sum = SIMD8<Float>(repeating: 0)
            var i = 0
            while i + 8 <= inputs {
                sum += load8(row + i) * load8(input + i)
                i += 8
            }
            var total = ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]))
            while i < inputs {
                total += row[i] * input[i]
                i += 1
            }
            output[o] = total
        }
    }
}
