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
        // Done once per load over 5.6 million weights, so kept cheap: eight weights at a time, a
        // multiply by the inverse scale, and rounding by adding 1.5 x 2^23, whose sum's low bits
        // are the nearest integer (ties to even; exact for |x| < 2^22): `rounded()` is a call into
        // libm on the baseline target. Each row is quantised into `row16`, then its pairs are
        // stored 32 bits at a time at their places in the block's `pairs` layout.
        var row16 = [Int16](repeating: 0, count: inStride + 8)
        w.withUnsafeBufferPointer { all in
            weights.withUnsafeMutableBufferPointer { packed in
                row16.withUnsafeMutableBufferPointer { row16 in
                    let magic: Float = 12_582_912, magicBits = Int32(bitPattern: magic.bitPattern)
                    let limit = SIMD8<Int32>(repeating: Int32(weightMax)), floor = SIMD8<Int32>(repeating: -Int32(weightMax))
                    let whole = patchLength / 8 * 8
                    for o in 0..<outChannels {
                        let row = all.baseAddress! + o * patchLength
                        func eight(_ i: Int) -> SIMD8<Float> {
                            UnsafeRawPointer(row + i).loadUnaligned(as: SIMD8<Float>.self)
                        }
                        // The largest magnitude, compared as the bits of |v|, which order as the
                        // values do (`pointwiseMax` on Floats is a per-lane call here, 30 ms a load).
                        var largest8 = SIMD8<Int32>.zero
                        for i in Swift.stride(from: 0, to: whole, by: 8) {
                            let bits = unsafeBitCast(eight(i), to: SIMD8<Int32>.self) & 0x7FFF_FFFF
                            largest8.replace(with: bits, where: bits .> largest8)
                        }
                        var largest = Float(bitPattern: UInt32(largest8.max()))
                        for i in whole..<patchLength { largest = max(largest, abs(row[i])) }
                        let scale = largest > 0 ? largest / weightMax : 1
                        let inverse = 1 / scale
                        var sum8 = SIMD8<Int32>.zero
                        for i in Swift.stride(from: 0, to: whole, by: 8) {
                            let rounded = unsafeBitCast(eight(i) * inverse + magic, to: SIMD8<Int32>.self) &- magicBits
                            let q = rounded.replacing(with: limit, where: rounded .> limit).replacing(with: floor, where: rounded .< floor)
                            sum8 &+= q
                            UnsafeMutableRawPointer(row16.baseAddress! + i).storeBytes(of: SIMD8<Int16>(truncatingIfNeeded: q), as: SIMD8<Int16>.self)
                        }
                        var sum = sum8.wrappedSum()
                        for i in whole..<inStride {
                            let q = i < patchLength ? Int16(max(-weightMax, min(weightMax, (row[i] * inverse + magic) - magic))) : 0
                            sum += Int32(q)
                            row16[i] = q
                        }
                        // Pair j of this channel goes to 32-bit lane (o % block) of the block's pair row j.
                        let pairs = UnsafeRawPointer(row16.baseAddress!)
                        let lanes = UnsafeMutableRawPointer(packed.baseAddress! + (o / block) * block * inStride + (o % block) * 2)
                        for j in 0..<(inStride / 2) {
                            lanes.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 4 * j, as: UInt32.self), toByteOffset: 4 * block * j, as: UInt32.self)
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
