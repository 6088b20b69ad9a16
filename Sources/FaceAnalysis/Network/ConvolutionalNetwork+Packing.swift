/// Weight packing: the graph's weights laid out the way the kernels read them, and the
/// padding arithmetic of TensorFlow's layers. Done once, when the plan is made.
extension ConvolutionalNetwork {
    /// The padding before the first pixel and the output size of TensorFlow's SAME (or VALID)
    /// padding along one axis.
    static func samePadding(_ size: Int, kernel: Int, stride: Int, padding: String?) throws(FaceAnalysisError) -> (Int, Int) {
        guard stride >= 1 else { throw FaceAnalysisError(.malformedModel, "stride \(stride)") }
        if padding == "valid" {
            return (0, (size - kernel) / stride + 1)
        }
        let out = (size + stride - 1) / stride
        let total = max((out - 1) * stride + kernel - size, 0)
        return (total / 2, out)
    }

    static func padBias(_ b: ArraySlice<Float>, to count: Int) -> [Float] {
        var out = [Float](repeating: 0, count: count)
        for (i, v) in b.enumerated() { out[i] = v }
        return out
    }

    /// [O][I] weights into blocks of 16 output channels (the last may be 8), each `inStride` rows.
    static func packPointwise(_ w: ArraySlice<Float>, outChannels: Int, inChannels: Int, inStride: Int) -> [Float] {
        let outStride = (outChannels + 7) / 8 * 8
        var packed = [Float](repeating: 0, count: outStride * inStride)
        var o = 0
        while o < outStride {
            let width = o + 16 <= outStride ? 16 : 8
            for i in 0..<inChannels {
                for j in 0..<width where o + j < outChannels {
                    packed[o * inStride + i * width + j] = w[w.startIndex + (o + j) * inChannels + i]
                }
            }
            o += width
        }
        return packed
    }

    /// [O][k][k][I] weights into blocks of 8 output channels, each a [k*k*inStride] patch of 8.
    static func packGeneral(_ w: ArraySlice<Float>, outChannels: Int, kernel: Int, inChannels: Int, inStride: Int) -> [Float] {
        let outStride = (outChannels + 7) / 8 * 8
        let patch = kernel * kernel * inStride
        var packed = [Float](repeating: 0, count: outStride * patch)
        for o in 0..<outChannels {
            for ky in 0..<kernel {
                for kx in 0..<kernel {
                    for i in 0..<inChannels {
                        let k = (ky * kernel + kx) * inStride + i
                        packed[(o / 8) * 8 * patch + k * 8 + o % 8] = w[w.startIndex + ((o * kernel + ky) * kernel + kx) * inChannels + i]
                    }
                }
            }
        }
        return packed
    }
}
