/// The integer convolutions' preparation, shared by every kernel set (its results are exact: a
/// minimum, a maximum, copies), so each set quantises with the same scale and reads the same
/// patches.
extension EmbeddingKernels {
    /// The smallest and largest of `count` floats (a multiple of 8).
    static func range(_ input: UnsafePointer<Float>, count: Int) -> (minimum: Float, maximum: Float) {
        var low = SIMD8<Float>(repeating: .infinity), high = SIMD8<Float>(repeating: -.infinity)
        var i = 0
        while i < count {
            let v = load8(input + i)
            // `replacing(with:where:)`: the generic pointwiseMin/Max are out-of-line calls here.
            low = low.replacing(with: v, where: v .< low)
            high = high.replacing(with: v, where: v .> high)
            i += 8
        }
        return (low.min(), high.max())
    }

    /// The patches of output rows `rows` of a `kernel`x`kernel` convolution with `stride` and
    /// `pad` over the Int16 tensor `input` (`height` x `width` x `channels`), one row of `inStride`
    /// values per output pixel in [ky][kx][channel] order (the weights' order); a tap outside the
    /// input reads `padValue` (the activations' zero point), the values past the patch read 0.
    static func gatherPatches(_ input: UnsafePointer<Int16>, height: Int, width: Int, channels: Int,
                              kernel: Int, stride: Int, pad: Int, padValue: Int16, outWidth: Int, rows: Range<Int>,
                              inStride: Int, output: UnsafeMutablePointer<Int16>) {
        let patch = kernel * kernel * channels
        var row = output
        for oy in rows {
            for ox in 0..<outWidth {
                var out = row
                let x0 = ox * stride - pad
                // The taps of one kernel row that lie inside the input are contiguous there.
                let first = max(0, -x0), last = min(kernel, width - x0)
                for ky in 0..<kernel {
                    let y = oy * stride + ky - pad
                    if y < 0 || y >= height || first >= last {
                        out.update(repeating: padValue, count: kernel * channels)
                    } else {
                        if first > 0 { out.update(repeating: padValue, count: first * channels) }
                        (out + first * channels).update(from: input + (y * width + x0 + first) * channels,
                                                        count: (last - first) * channels)
                        if last < kernel { (out + last * channels).update(repeating: padValue, count: (kernel - last) * channels) }
                    }
                    out += kernel * channels
                }
                if inStride > patch { (row + patch).update(repeating: 0, count: inStride - patch) }
                row += inStride
            }
        }
    }
}
