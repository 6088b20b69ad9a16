import CNNKernels
import CNNKernelsAVX2
import CNNKernelsAVX512

/// One thread's activation buffers for a `FaceDescriptorNetwork` (three slots, 1.1 MB), reused for every
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
    }

    deinit {
        UnsafeMutableRawPointer(arena).deallocate()
        patch.deallocate()
    }

    private func buffer(_ tensor: Int) -> UnsafeMutablePointer<Float> { buffers[network.slots[tensor]!] }

    func run(_ chip: FaceChip) -> [Float] {
        let input = buffer(0)
        let mean = network.inputMean, scale = network.inputScale
        chip.rgb.withUnsafeBufferPointer { rgb in
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
}
