import CNNKernels

/// One convolution of the face descriptor quantised for the 16-bit integer kernels
/// (`NetworkKernelSet.pointwiseInt16`), run as a 1x1 convolution over gathered patches: the
/// weights [O][k][k][I] are already the rows [O][k*k*I] of that 1x1 convolution.
///
/// Weights are quantised symmetrically per output channel to `-weightMax...weightMax`, the largest
/// magnitude that keeps every Int32 sum exact with activations in `0...activationLevels`
/// (`activationLevels * weightMax * patch < 2^31`: 14,183 for the first layer's 147 inputs,
/// 911 for the 2,304 of the widest). Activations are quantised per tensor and per call from the
/// tensor's own range (`FaceDescriptorWorkspace`), so nothing is calibrated and every chip gets
/// the full 1,023 levels. The first layer reads the chip's bytes as they are: its per-channel
/// mean and scale are folded into the bias and the multipliers, so it quantises nothing.
final class QuantizedConvolution: Sendable {
    /// Activation levels above zero (10 bits): 8 bits cost dlib's ResNet a distance of 0.009
    /// to dlib's own descriptors on the parity chips, 10 bits 0.003 (`Models/face-embedding.md`).
    static let activationLevels: Int32 = 1023

    let kernel: Int
    let stride: Int
    let pad: Int
    let inChannels: Int
    /// Output channels (a multiple of 16, as the descriptor's are).
    let outChannels: Int
    /// Values in one gathered patch (`kernel * kernel * inChannels`) and its row length, even
    /// for the `pairs` layout (the extra value is zero with zero weights).
    let patchLength: Int
    let inStride: Int
    /// Int16 weights in the `pairs` layout, blocks of 16 output channels.
    let weights: [Int16]
    /// Per output channel: the weights' scale, the sum of its quantised weights (what a nonzero
    /// activation zero point subtracts), and the bias.
    let weightScales: [Float]
    let weightSums: [Int32]
    let bias: [Float]
    /// For a layer that reads the chip's bytes: the input scale its multipliers are made with
    /// (`multipliers`), else nil (the scale comes with each call's quantisation).
    let pixelScale: Float?
    /// `pixelScale * weightScales`, for the pixel layer.
    let multipliers: [Float]

    /// Quantises [O][k][k][I] weights `w`. With `pixels` (the network's per-channel input mean and
    /// scale), the layer is to read raw bytes: `(byte - mean) * scale` folded into the bias.
    init(weights w: ArraySlice<Float>, bias b: ArraySlice<Float>, outChannels: Int, kernel: Int, inChannels: Int,
         stride: Int, pad: Int, pixels: (mean: [Float], scale: Float)?) {
        let block = NetworkKernels.int8Block
        precondition(outChannels % block == 0, "output channels come in blocks of \(block)")
        let patchLength = kernel * kernel * inChannels
        let inStride = (patchLength + 1) / 2 * 2
        let weightMax = Float(min(Int(Int16.max), Int(Int32.max) / (Int(Self.activationLevels) * inStride)))
        var weights = [Int16](repeating: 0, count: outChannels * inStride)
        var weightScales = [Float](repeating: 0, count: outChannels)
        var weightSums = [Int32](repeating: 0, count: outChannels)
        var bias = [Float](repeating: 0, count: outChannels)
        // Done once per load over 5.6 million weights, so kept cheap: buffer pointers, a multiply
        // by the inverse scale, rounding without a libm call.
        w.withUnsafeBufferPointer { all in
            weights.withUnsafeMutableBufferPointer { packed in
                for o in 0..<outChannels {
                    let row = UnsafeBufferPointer(rebasing: all[(o * patchLength)..<((o + 1) * patchLength)])
                    var largest: Float = 0
                    for v in row { largest = max(largest, abs(v)) }
                    let scale = largest > 0 ? largest / weightMax : 1
                    let inverse = 1 / scale
                    let lanes = packed.baseAddress! + (o / block) * block * inStride + (o % block) * 2
                    var sum: Int32 = 0
                    for i in 0..<patchLength {
                        // Rounded to nearest even by adding and taking away 1.5 x 2^23 (exact for
                        // |x| < 2^22): `rounded()` is a call into libm on the baseline target.
                        let x = row[i] * inverse
                        let q = Int16(max(-weightMax, min(weightMax, (x + 12_582_912) - 12_582_912)))
                        sum += Int32(q)
                        lanes[(i / 2) * block * 2 + i % 2] = q
                    }
                    weightScales[o] = scale
                    weightSums[o] = sum
                    var shift = Double(b[b.startIndex + o])
                    if let pixels {
                        // (byte - mean) * scale: the mean's share of every output, with the Float weights.
                        for i in 0..<patchLength { shift -= Double(row[i]) * Double(pixels.scale) * Double(pixels.mean[i % inChannels]) }
                    }
                    bias[o] = Float(shift)
                }
            }
        }
        self.kernel = kernel
        self.stride = stride
        self.pad = pad
        self.inChannels = inChannels
        self.outChannels = outChannels
        self.patchLength = patchLength
        self.inStride = inStride
        self.weights = weights
        self.weightScales = weightScales
        self.weightSums = weightSums
        self.bias = bias
        pixelScale = pixels?.scale
        multipliers = pixels.map { p in weightScales.map { $0 * p.scale } } ?? []
    }

    /// Output rows per gathered band, so that a band's patches stay near 128 KB (in L2 while every
    /// block of output channels reads them).
    func bandRows(outWidth: Int) -> Int {
        max(1, 65_536 / (outWidth * inStride))
    }
}
