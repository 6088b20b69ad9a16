import CNNKernels
import CNNKernelsAVX2
import CNNKernelsAVX512

/// One thread's buffers for a `FaceDescriptorNetwork` (the activation slots, 1.1 MB, and at int16 the
/// quantised input and a band of gathered patches, 0.26 MB), reused for every
/// chip. Used by one caller at a time.
public final class FaceDescriptorWorkspace: @unchecked Sendable {
    /// The network the buffers are laid out for.
    public let network: FaceDescriptorNetwork
    /// The kernels that run the convolutions (never a set the processor lacks). AVX2 and AVX-512
    /// give the same bits; the portable set rounds its multiply-adds twice and differs in the last
    /// bits (each is within dlib's parity).
    public let kernels: NetworkWorkspace.Kernels
    private let arena: UnsafeMutablePointer<Float>
    private let buffers: [UnsafeMutablePointer<Float>]
    private let patch: UnsafeMutablePointer<Float>
    private let patchLength: Int
    /// The integer convolutions' scratch: the quantised input, a band of gathered patches, and
    /// each call's multipliers and sum bases (per output channel).
    private let quantized: UnsafeMutablePointer<Int16>
    private let patches: UnsafeMutablePointer<Int16>
    private let multipliers: UnsafeMutablePointer<Float>
    private let sumBase: UnsafeMutablePointer<Int32>
    private let channels: Int

    /// Buffers for `network`, run with `kernels` (the fastest this processor has by default; an
    /// unsupported choice falls back to `portable`).
    public init(network: FaceDescriptorNetwork, kernels: NetworkWorkspace.Kernels = .best) {
        self.network = network
        self.kernels = kernels.isSupported ? kernels : .portable
        let sizes = network.slotSizes.map { ($0 + 15) / 16 * 16 }
        let total = sizes.reduce(0, +)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: max(total, 16) * MemoryLayout<Float>.stride, alignment: 64)
        let arena = raw.initializeMemory(as: Float.self, repeating: 0, count: max(total, 16))
        var offset = 0
        buffers = sizes.map { size in
            defer { offset += size }
            return arena + offset
        }
        self.arena = arena
        patchLength = network.patchLength
        patch = .allocate(capacity: patchLength)
        patch.initialize(repeating: 0, count: patchLength)
        quantized = .allocate(capacity: max(network.quantizedLength, 8))
        quantized.initialize(repeating: 0, count: max(network.quantizedLength, 8))
        patches = .allocate(capacity: max(network.integerPatchLength, 8))
        patches.initialize(repeating: 0, count: max(network.integerPatchLength, 8))
        channels = max(8, network.steps.compactMap { step -> Int? in
            if case .integerConvolution(_, _, let c, _, _, _) = step { c.outChannels } else { nil }
        }.max() ?? 0)
        multipliers = .allocate(capacity: channels)
        multipliers.initialize(repeating: 0, count: channels)
        sumBase = .allocate(capacity: channels)
        sumBase.initialize(repeating: 0, count: channels)
    }

    deinit {
        UnsafeMutableRawPointer(arena).deallocate()
        patch.deallocate()
        quantized.deallocate()
        patches.deallocate()
        multipliers.deallocate()
        sumBase.deallocate()
    }

    private func buffer(_ tensor: Int) -> UnsafeMutablePointer<Float> { buffers[network.slots[tensor]!] }

    func run(_ chip: FaceChip) -> [Float] {
        let input = buffer(0)
        let mean = network.inputMean, scale = network.inputScale
        chip.rgb.withUnsafeBufferPointer { rgb in
            if network.precision == .int16 {
                // The first (integer) convolution reads the bytes themselves.
                for i in rgb.indices { quantized[i] = Int16(rgb[i]) }
                return
            }
            for p in 0..<(FaceDescriptorNetwork.chipSize * FaceDescriptorNetwork.chipSize) {
                input[3 * p] = (Float(rgb[3 * p]) - mean[0]) * scale
                input[3 * p + 1] = (Float(rgb[3 * p + 1]) - mean[1]) * scale
                input[3 * p + 2] = (Float(rgb[3 * p + 2]) - mean[2]) * scale
            }
        }
        switch kernels {
        case .portable: for step in network.steps { execute(step, PortableKernels.self) }
        case .avx2: for step in network.steps { execute(step, AVX2Kernels.self) }
        case .avx512: for step in network.steps { execute(step, AVX512Kernels.self) }
        }
        return Array(UnsafeBufferPointer(start: buffer(network.output), count: FaceDescriptorNetwork.dimensions))
    }

    private func execute<K: NetworkKernelSet>(_ step: FaceDescriptorNetwork.Step, _: K.Type) {
        let shapes = network.shapes
        switch step {
        case .convolution(let input, let output, let weights, let bias, let kernel, let stride, let pad, let relu):
            let x = shapes[input]!, y = shapes[output]!
            weights.withUnsafeBufferPointer { w in
                bias.withUnsafeBufferPointer { b in
                    K.convolution(input: buffer(input), height: x.height, width: x.width, inChannels: x.channels,
                                  kernel: kernel, stride: stride, padTop: pad, padLeft: pad,
                                  weights: w.baseAddress!, bias: b.baseAddress!, output: buffer(output),
                                  outHeight: y.height, outWidth: y.width, outStride: y.channels, relu: relu, patch: patch)
                }
            }
        case .integerConvolution(let input, let output, let convolution, let relu, let residual, let reluAfterAdd):
            var epilogue = NetworkKernels.Epilogue(reluBeforeAdd: relu, residual: nil, residualStride: 0, reluAfterAdd: reluAfterAdd)
            if let residual {
                epilogue.residual = UnsafePointer(buffer(residual))
                epilogue.residualStride = shapes[residual]!.channels
            }
            integerConvolution(convolution, input: input, output: output, epilogue: epilogue, K.self)
        case .maxPool(let input, let output, let size, let stride):
            let x = shapes[input]!, y = shapes[output]!
            EmbeddingKernels.maxPool(buffer(input), height: x.height, width: x.width, channels: x.channels, size: size,
                                     stride: stride, output: buffer(output), outHeight: y.height, outWidth: y.width)
        case .averagePool(let input, let output):
            let x = shapes[input]!, y = shapes[output]!
            EmbeddingKernels.averagePool2x2(buffer(input), height: x.height, width: x.width, channels: x.channels,
                                            output: buffer(output), outHeight: y.height, outWidth: y.width)
        case .add(let a, let b, let output, let relu):
            EmbeddingKernels.addZeroPadded(buffer(a), shapes[a]!, buffer(b), shapes[b]!, output: buffer(output), shapes[output]!, relu: relu)
        case .mean(let input, let output):
            let x = shapes[input]!
            EmbeddingKernels.mean(buffer(input), pixels: x.height * x.width, channels: x.channels, output: buffer(output))
        case .fullyConnected(let input, let output, let weights):
            let x = shapes[input]!, y = shapes[output]!
            weights.withUnsafeBufferPointer { w in
                EmbeddingKernels.fullyConnected(buffer(input), inputs: x.floats, weights: w.baseAddress!, outputs: y.channels,
                                                output: buffer(output))
            }
        }
    }

    /// A convolution on the 16-bit integer kernels: the input quantised over its own range (the
    /// first layer's is the chip's bytes, already in `quantized`), then band by band its patches
    /// gathered and run as a 1x1 convolution.
    private func integerConvolution<K: NetworkKernelSet>(_ c: QuantizedConvolution, input: Int, output: Int,
                                                         epilogue: NetworkKernels.Epilogue, _: K.Type) {
        let x = network.shapes[input]!, y = network.shapes[output]!
        var padValue: Int16 = 0
        if c.pixelScale != nil {
            c.multipliers.withUnsafeBufferPointer { multipliers.update(from: $0.baseAddress!, count: c.outChannels) }
            sumBase.update(repeating: 0, count: c.outChannels)
        } else {
            let levels = QuantizedConvolution.activationLevels
            let range = EmbeddingKernels.range(buffer(input), count: x.floats)
            let q = NetworkKernels.Quantization(minimum: range.minimum, maximum: range.maximum, levels: levels)
            K.quantizeInt16(buffer(input), count: x.floats, q, levels: levels, output: quantized)
            for o in 0..<c.outChannels {
                multipliers[o] = q.scale * c.weightScales[o]
                sumBase[o] = 0 &- q.zeroPoint &* c.weightSums[o]
            }
            padValue = Int16(q.zeroPoint)
        }
        let bandRows = c.bandRows(outWidth: y.width)
        c.weights.withUnsafeBufferPointer { w in
            c.bias.withUnsafeBufferPointer { b in
                var row = 0
                while row < y.height {
                    let rows = row..<min(y.height, row + bandRows)
                    EmbeddingKernels.gatherPatches(quantized, height: x.height, width: x.width, channels: x.channels,
                                                   kernel: c.kernel, stride: c.stride, pad: c.pad, padValue: padValue,
                                                   outWidth: y.width, rows: rows, inStride: c.inStride, output: patches)
                    var band = epilogue
                    band.residual = epilogue.residual.map { $0 + row * y.width * epilogue.residualStride }
                    K.pointwiseInt16(input: patches, inStride: c.inStride, pixels: rows.count * y.width, weights: w.baseAddress!,
                                     sumBase: sumBase, multipliers: multipliers, bias: b.baseAddress!,
                                     output: buffer(output) + row * y.width * y.channels, outStride: y.channels,
                                     epilogue: band)
                    row = rows.upperBound
                }
            }
        }
    }
}
