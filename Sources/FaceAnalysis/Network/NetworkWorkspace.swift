import CNNKernels
import CNNKernelsAVX2
import CNNKernelsAVX512

/// One thread's activation buffers for a `ConvolutionalNetwork`. Used by one caller at a time (it
/// may pass between threads, as `BlazeFace`'s pool hands it on), and reused for every image.
public final class NetworkWorkspace: @unchecked Sendable {
    /// Which compiled kernels run the network.
    public enum Kernels: String, Sendable, CaseIterable {
        /// The baseline x86-64 build: runs on any processor.
        case portable
        /// AVX2 + FMA: about twice as fast; only where the processor has them.
        case avx2
        /// AVX-512 + VNNI (int8 1x1 convolutions on `vpdpbusd`, Float ones 16 channels wide);
        /// only where the processor has them.
        case avx512
        /// The fastest this processor supports.
        public static var best: Kernels { AVX512Kernels.isSupported ? .avx512 : AVX2Kernels.isSupported ? .avx2 : .portable }
        /// Whether this processor can run these kernels.
        public var isSupported: Bool {
            switch self {
            case .portable: return true
            case .avx2: return AVX2Kernels.isSupported
            case .avx512: return AVX512Kernels.isSupported
            }
        }
    }

    /// The plan the buffers are laid out for (see `use(_:)`).
    public private(set) var network: ConvolutionalNetwork
    /// The kernels this workspace runs (never one the processor lacks).
    public let kernels: Kernels
    /// One allocation holds every slot, back to back; a plan for another input size reuses it
    /// (growing it when that plan needs more), so one workspace serves every tile size.
    private var arena: UnsafeMutablePointer<Float>
    private var capacity: Int
    private var slots: [UnsafeMutablePointer<Float>] = []
    private var patch: UnsafeMutablePointer<Float>
    private var patchCapacity: Int
    /// An int8 step's input, quantised (`ConvolutionalNetwork.quantizedBytes`).
    private var quantized: UnsafeMutableRawPointer
    private var quantizedCapacity: Int

    /// Buffers for `network` (a few megabytes for BlazeFace), run with `kernels` (the fastest this
    /// processor supports by default; an unsupported choice falls back to `portable`).
    public init(network: ConvolutionalNetwork, kernels: Kernels = .best) {
        self.network = network
        self.kernels = kernels.isSupported ? kernels : .portable
        capacity = max(network.arenaFloats, 8)
        arena = Self.allocateArena(capacity)
        patchCapacity = max(network.patchLength, 8)
        patch = .allocate(capacity: patchCapacity)
        patch.initialize(repeating: 0, count: patchCapacity)
        quantizedCapacity = max(network.quantizedBytes, 64)
        quantized = .allocate(byteCount: quantizedCapacity, alignment: 64)
        layOut()
    }

    deinit {
        UnsafeMutableRawPointer(arena).deallocate()
        patch.deallocate()
        quantized.deallocate()
    }

    /// Zeroed floats starting on a cache line. Every slot is a whole number of cache lines, so a
    /// tensor's 8-float vectors never straddle two lines: on the 16-byte boundary `allocate` gives,
    /// a quarter of a 32-channel row's loads did, and the depthwise steps ran 25-35% slower.
    private static func allocateArena(_ floats: Int) -> UnsafeMutablePointer<Float> {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: floats * MemoryLayout<Float>.stride, alignment: 64)
        return raw.initializeMemory(as: Float.self, repeating: 0, count: floats)
    }

    /// Lays the buffers out for `plan` (another input size of the same network, say), growing them
    /// if it needs more than they hold.
    public func use(_ plan: ConvolutionalNetwork) {
        let needed = max(plan.arenaFloats, 8)
        if needed > capacity {
            UnsafeMutableRawPointer(arena).deallocate()
            capacity = needed
            arena = Self.allocateArena(capacity)
        }
        if plan.patchLength > patchCapacity {
            patch.deallocate()
            patchCapacity = plan.patchLength
            patch = .allocate(capacity: patchCapacity)
            patch.initialize(repeating: 0, count: patchCapacity)
        }
        if plan.quantizedBytes > quantizedCapacity {
            quantized.deallocate()
            quantizedCapacity = plan.quantizedBytes
            quantized = .allocate(byteCount: quantizedCapacity, alignment: 64)
        }
        network = plan
        layOut()
    }

    /// The floats this workspace holds.
    public var floats: Int { capacity + patchCapacity + quantizedCapacity / 4 }

    private func layOut() {
        var offset = 0
        slots = network.slotSizes.map { size in
            defer { offset += (size + 15) / 16 * 16 }
            return arena + offset
        }
    }

    /// The input tensor to fill before `run()`: height x width x channels floats, unpadded.
    public var input: UnsafeMutableBufferPointer<Float> {
        let layout = network.layouts[network.inputTensor]!
        return UnsafeMutableBufferPointer(start: slots[layout.slot], count: layout.floats)
    }

    /// Runs every step on the current input.
    public func run() {
        switch kernels {
        case .portable: for (i, step) in network.steps.enumerated() { execute(step, at: i, with: PortableKernels.self) }
        case .avx2: for (i, step) in network.steps.enumerated() { execute(step, at: i, with: AVX2Kernels.self) }
        case .avx512: for (i, step) in network.steps.enumerated() { execute(step, at: i, with: AVX512Kernels.self) }
        }
    }

    /// Runs every step on the current input, widening `ranges` (by op index) to the smallest and
    /// largest value each Float 1x1 convolution reads: what `BlazeFace.calibrate` measures.
    public func run(recordingRanges ranges: inout [Int: (Float, Float)]) {
        for (index, step) in network.steps.enumerated() {
            if case let .pointwise(input, _, _, _, _, _, _) = step {
                let (x, xl) = tensor(input)
                var low = ranges[network.stepOps[index]]?.0 ?? 0, high = ranges[network.stepOps[index]]?.1 ?? 0
                for v in UnsafeBufferPointer(start: x, count: xl.pixels * xl.stride) {
                    low = min(low, v)
                    high = max(high, v)
                }
                ranges[network.stepOps[index]] = (low, high)
            }
            switch kernels {
            case .portable: execute(step, at: index, with: PortableKernels.self)
            case .avx2: execute(step, at: index, with: AVX2Kernels.self)
            case .avx512: execute(step, at: index, with: AVX512Kernels.self)
            }
        }
    }

    /// Runs every step on the current input and returns each step's kind, output size and
    /// nanoseconds (monotonic clock), for `photodrain bench` and kernel work.
    public func profile() -> [(step: String, nanoseconds: UInt64)] {
        var result: [(String, UInt64)] = []
        for (index, step) in network.steps.enumerated() {
            let start = SystemCalls.monotonicNanoseconds()
            switch kernels {
            case .portable: execute(step, at: index, with: PortableKernels.self)
            case .avx2: execute(step, at: index, with: AVX2Kernels.self)
            case .avx512: execute(step, at: index, with: AVX512Kernels.self)
            }
            result.append((describe(step), SystemCalls.monotonicNanoseconds() - start))
        }
        return result
    }

    private func describe(_ step: ConvolutionalNetwork.Step) -> String {
        func shape(_ id: Int) -> String {
            let l = network.layouts[id]!
            return "\(l.height)x\(l.width)x\(l.channels)"
        }
        switch step {
        case let .pointwise(input, output, _, _, _, residual, _):
            return "pointwise \(shape(input))->\(shape(output))" + (residual == nil ? "" : " +add")
        case let .pointwiseInt8(input, output, _, _, residual, _):
            return "pointwise-int8 \(shape(input))->\(shape(output))" + (residual == nil ? "" : " +add")
        case let .depthwise(input, output, _, _, _, _, _, _): return "depthwise \(shape(input))->\(shape(output))"
        case let .convolution(input, output, _, _, _, _, _, _, _): return "conv \(shape(input))->\(shape(output))"
        case let .maxPool(input, output): return "maxpool \(shape(input))->\(shape(output))"
        case let .resize(input, output): return "resize \(shape(input))->\(shape(output))"
        case let .add(a, _, output, _): return "add \(shape(a))->\(shape(output))"
        case let .padChannels(input, output, _): return "pad \(shape(input))->\(shape(output))"
        }
    }

    /// The output of `role` (`regressors`, `classificators`) after `run()`: `count` rows of
    /// `values` floats, `stride` apart.
    public func output(_ role: String) -> (pointer: UnsafePointer<Float>, count: Int, values: Int, stride: Int)? {
        guard let id = network.outputs[role], let layout = network.layouts[id] else { return nil }
        return (UnsafePointer(slots[layout.slot]), layout.pixels, layout.channels, layout.stride)
    }

    /// What a 1x1 convolution does after its sums, Float or int8 alike: ReLU, the residual
    /// operand read in place, ReLU again.
    private func epilogue(reluBeforeAdd: Bool, residual: Int?, reluAfterAdd: Bool) -> NetworkKernels.Epilogue {
        var epilogue = NetworkKernels.Epilogue(reluBeforeAdd: reluBeforeAdd, residual: nil, residualStride: 0, reluAfterAdd: reluAfterAdd)
        if let residual {
            let (r, rl) = tensor(residual)
            epilogue.residual = UnsafePointer(r)
            epilogue.residualStride = rl.stride
        }
        return epilogue
    }

    private func tensor(_ id: Int) -> (UnsafeMutablePointer<Float>, ConvolutionalNetwork.TensorLayout) {
        let layout = network.layouts[id]!
        return (slots[layout.slot], layout)
    }

    private func execute<K: NetworkKernelSet>(_ step: ConvolutionalNetwork.Step, at index: Int, with _: K.Type) {
        switch step {
        case let .pointwise(input, output, weights, bias, reluBeforeAdd, residual, reluAfterAdd):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
            let epilogue = self.epilogue(reluBeforeAdd: reluBeforeAdd, residual: residual, reluAfterAdd: reluAfterAdd)
            weights.withUnsafeBufferPointer { w in
                bias.withUnsafeBufferPointer { b in
                    K.pointwise(input: x, inStride: xl.stride, pixels: xl.pixels, weights: w.baseAddress!,
                                             bias: b.baseAddress!, output: y, outStride: yl.stride, epilogue: epilogue)
                }
            }
        case let .pointwiseInt8(input, output, q, reluBeforeAdd, residual, reluAfterAdd):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
            let epilogue = self.epilogue(reluBeforeAdd: reluBeforeAdd, residual: residual, reluAfterAdd: reluAfterAdd)
            if !network.prequantized.contains(index) {
                K.quantize(x, count: xl.pixels * xl.stride, q.quantization, output: quantized)
            }
            let input = UnsafeRawPointer(quantized)
            func run(_ w: UnsafeRawPointer) {
                q.sumBase.withUnsafeBufferPointer { s in
                    q.multipliers.withUnsafeBufferPointer { m in
                        q.bias.withUnsafeBufferPointer { b in
                            K.pointwiseInt8(input: input, inStride: xl.stride, pixels: xl.pixels, weights: w,
                                            sumBase: s.baseAddress!, multipliers: m.baseAddress!, bias: b.baseAddress!,
                                            output: y, outStride: yl.stride, epilogue: epilogue)
                        }
                    }
                }
            }
            switch K.int8Layout {
            case .quads: q.quads.withUnsafeBytes { run($0.baseAddress!) }
            case .pairs: q.pairs.withUnsafeBytes { run($0.baseAddress!) }
            }
        case let .depthwise(input, output, weights, bias, stride, padTop, padLeft, relu):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
            if let q = network.depthwiseQuantization[index] {
                weights.withUnsafeBufferPointer { w in
                    bias.withUnsafeBufferPointer { b in
                        K.depthwise3x3Quantized(input: x, height: xl.height, width: xl.width, channels: xl.stride,
                                                stride: stride, padTop: padTop, padLeft: padLeft, weights: w.baseAddress!,
                                                bias: b.baseAddress!, output: quantized, outHeight: yl.height, outWidth: yl.width,
                                                relu: relu, quantization: q)
                    }
                }
                return
            }
            weights.withUnsafeBufferPointer { w in
                bias.withUnsafeBufferPointer { b in
                    K.depthwise3x3(input: x, height: xl.height, width: xl.width, channels: xl.stride,
                                                stride: stride, padTop: padTop, padLeft: padLeft, weights: w.baseAddress!,
                                                bias: b.baseAddress!, output: y, outHeight: yl.height, outWidth: yl.width, relu: relu)
                }
            }
        case let .convolution(input, output, weights, bias, kernel, stride, padTop, padLeft, relu):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
            weights.withUnsafeBufferPointer { w in
                bias.withUnsafeBufferPointer { b in
                    K.convolution(input: x, height: xl.height, width: xl.width, inChannels: xl.stride,
                                               kernel: kernel, stride: stride, padTop: padTop, padLeft: padLeft,
                                               weights: w.baseAddress!, bias: b.baseAddress!, output: y,
                                               outHeight: yl.height, outWidth: yl.width, outStride: yl.stride,
                                               relu: relu, patch: patch)
                }
            }
        case let .maxPool(input, output):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
            K.maxPool2x2(input: x, height: xl.height, width: xl.width, channels: xl.stride,
                                      output: y, outHeight: yl.height, outWidth: yl.width)
        case let .resize(input, output):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
            K.resizeBilinear(input: x, height: xl.height, width: xl.width, channels: xl.stride,
                                          output: y, outHeight: yl.height, outWidth: yl.width)
        case let .add(a, b, output, relu):
            let (x, xl) = tensor(a)
            let (z, zl) = tensor(b)
            let (y, _) = tensor(output)
            K.add(x, aStride: xl.stride, z, bStride: zl.stride, pixels: xl.pixels, output: y, relu: relu)
        case let .padChannels(input, output, before):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
            NetworkKernels.padChannels(x, inStride: xl.stride, pixels: xl.pixels, before: before, output: y, outStride: yl.stride)
        }
    }
}

extension NetworkWorkspace.Kernels {
    /// The image rows around the network (`ImageRows`: the pyramid, the tile fill) compiled for
    /// this set, or the portable ones where the processor lacks it.
    var imageRows: any ImageRowKernelSet.Type {
        switch isSupported ? self : .portable {
        case .portable: PortableKernels.self
        case .avx2: AVX2Kernels.self
        case .avx512: AVX512Kernels.self
        }
    }
}
