import CNNKernels
import CNNKernelsAVX2

/// A convolutional network ready to run: a `NetworkFile`'s graph turned into a fixed list of
/// kernel calls with repacked weights, fused epilogues and a buffer plan.
///
/// Immutable and `Sendable`: load it once and share it. Each thread runs it through its own
/// `NetworkWorkspace`, which owns the activation buffers, so inference allocates nothing.
///
/// Fusions: a ReLU folds into the op before it (done by the converter); a 1x1 convolution whose
/// only reader is an `add` computes the add (and its ReLU) in its epilogue, reading the other
/// operand in place; a `pad_channels` whose only reader is such an add is never materialised, its
/// zero channels are simply not added.
public final class ConvolutionalNetwork: Sendable {
    /// Where a tensor lives and how it is laid out: `height x width` pixels of `stride` floats, of
    /// which the first `channels` are real and the rest zero.
    struct TensorLayout: Sendable {
        var height: Int
        var width: Int
        var channels: Int
        var stride: Int
        var slot: Int
        var pixels: Int { height * width }
        var floats: Int { height * width * stride }
    }

    enum Step: Sendable {
        case pointwise(input: Int, output: Int, weights: [Float], bias: [Float],
                       reluBeforeAdd: Bool, residual: Int?, reluAfterAdd: Bool)
        case depthwise(input: Int, output: Int, weights: [Float], bias: [Float], stride: Int,
                       padTop: Int, padLeft: Int, relu: Bool)
        case convolution(input: Int, output: Int, weights: [Float], bias: [Float], kernel: Int, stride: Int,
                         padTop: Int, padLeft: Int, relu: Bool)
        case maxPool(input: Int, output: Int)
        case resize(input: Int, output: Int)
        case add(a: Int, b: Int, output: Int, relu: Bool)
        case padChannels(input: Int, output: Int, before: Int)
    }

    /// The weight file's name and identifier (`name@sha8`).
    public let name: String
    public let identifier: String
    /// The input's height, width and channels.
    public let inputShape: (height: Int, width: Int, channels: Int)
    let layouts: [Int: TensorLayout]
    let steps: [Step]
    /// Floats per buffer slot.
    let slotSizes: [Int]
    let inputTensor: Int
    /// Output tensor ids by role.
    let outputs: [String: Int]
    /// Scratch floats a general convolution needs: `NetworkKernels.convolutionPixels` of its longest patch.
    let patchLength: Int
    /// Floats a workspace needs for this plan: every slot, each rounded up to 16 floats (64 bytes).
    var arenaFloats: Int { slotSizes.reduce(0) { $0 + ($1 + 15) / 16 * 16 } }
    /// Repacked weights and bias by op index: the same for every input size, so plans for other
    /// sizes share them (arrays are copy-on-write) instead of repacking megabytes.
    let packed: [Int: (weights: [Float], bias: [Float])]

    /// Loads and plans the network at `path`; throws what `NetworkFile.load` throws, and
    /// `malformedModel` for a graph this runner does not support.
    public convenience init(contentsOf path: String) throws(FaceAnalysisError) {
        let file = try NetworkFile.load(path)
        do {
            try self.init(file: file)
        } catch {
            throw error.about(path)
        }
    }

    /// Plans `file`'s graph for its recorded input size, or for `inputSize` (each side a multiple
    /// of 32); throws `malformedModel` for an op, shape or layout it cannot run.
    public init(file: NetworkFile, inputSize: (height: Int, width: Int)? = nil,
                sharingWeightsWith template: ConvolutionalNetwork? = nil) throws(FaceAnalysisError) {
        func unsupported(_ why: String) -> FaceAnalysisError {
            FaceAnalysisError(.malformedModel, "the network cannot be run: \(why)")
        }
        name = file.name
        identifier = file.identifier
        inputTensor = file.inputTensor
        guard file.inputShape.count == 3 else { throw unsupported("input shape \(file.inputShape)") }

        // Shapes: the converter's, or propagated from another input size (the network is fully
        // convolutional, so any size whose halvings stay whole runs the same weights).
        var shapes: [Int: (h: Int, w: Int, c: Int)] = [:]
        for (id, info) in file.tensors {
            switch info.shape.count {
            case 3: shapes[id] = (info.shape[0], info.shape[1], info.shape[2])
            case 2: shapes[id] = (info.shape[0], 1, info.shape[1])
            default: throw unsupported("tensor \(id) has shape \(info.shape)")
            }
        }
        let recorded = shapes
        let height = inputSize?.height ?? file.inputShape[0]
        let width = inputSize?.width ?? file.inputShape[1]
        guard height > 0, width > 0, height % 32 == 0, width % 32 == 0 else {
            throw unsupported("input \(width)x\(height) is not a multiple of 32 on each side")
        }
        inputShape = (height, width, file.inputShape[2])
        shapes[file.inputTensor] = (height, width, file.inputShape[2])
        for op in file.operations {
            guard let x = shapes[op.in[0]] else { throw unsupported("op \(op.op) reads tensor \(op.in[0]) before it is written") }
            let stride = op.stride ?? 1
            switch op.op {
            case "conv", "depthwise":
                let k = op.kernel ?? [1, 1]
                guard k.count == 2, let ws = op.weights_shape, ws.count == 4 else { throw unsupported("op \(op.op): kernel") }
                let (_, oh) = try Self.samePadding(x.h, kernel: k[0], stride: stride, padding: op.padding)
                let (_, ow) = try Self.samePadding(x.w, kernel: k[1], stride: stride, padding: op.padding)
                shapes[op.out] = (oh, ow, op.op == "conv" ? ws[0] : x.c)
            case "maxpool":
                shapes[op.out] = ((x.h + stride - 1) / stride, (x.w + stride - 1) / stride, x.c)
            case "resize_bilinear":
                guard let fileIn = recorded[op.in[0]], let fileOut = recorded[op.out], fileIn.h > 0, fileIn.w > 0 else {
                    throw unsupported("resize without recorded shapes")
                }
                shapes[op.out] = (x.h * fileOut.h / fileIn.h, x.w * fileOut.w / fileIn.w, x.c)
            case "add":
                shapes[op.out] = x
            case "pad_channels":
                shapes[op.out] = (x.h, x.w, x.c + (op.before ?? 0) + (op.after ?? 0))
            case "reshape":
                shapes[op.out] = (x.h * x.w, 1, x.c)
            default:
                throw unsupported("op \(op.op)")
            }
        }
        let ops = file.operations
        var readers: [Int: [Int]] = [:]
        for (index, op) in ops.enumerated() {
            for id in op.in { readers[id, default: []].append(index) }
        }
        let graphOutputs = Set(file.outputs.values)
        var aliases: [Int: Int] = [:]          // reshape output -> the tensor it views
        func resolve(_ id: Int) -> Int { aliases[id].map(resolve) ?? id }

        // Which adds fold into the 1x1 convolution that feeds them, and which pads fold into those adds.
        var foldedAdd: [Int: Int] = [:]        // conv op index -> add op index
        var skipped = Set<Int>()               // op indices that produce nothing of their own
        var foldedPad: [Int: Int] = [:]        // pad output tensor -> pad input tensor
        for (index, op) in ops.enumerated() where op.op == "conv" && op.kernel == [1, 1] {
            guard let r = readers[op.out], r.count == 1, !graphOutputs.contains(op.out) else { continue }
            let addIndex = r[0]
            let add = ops[addIndex]
            guard add.op == "add", add.in.count == 2, add.in[0] != add.in[1] else { continue }
            let other = add.in[0] == op.out ? add.in[1] : add.in[0]
            guard let otherShape = shapes[other], let outShape = shapes[op.out],
                  otherShape.h == outShape.h, otherShape.w == outShape.w, otherShape.c <= outShape.c else { continue }
            foldedAdd[index] = addIndex
            skipped.insert(addIndex)
            if let padIndex = ops.firstIndex(where: { $0.out == other }), ops[padIndex].op == "pad_channels",
               ops[padIndex].before ?? 0 == 0, readers[other]?.count == 1 {
                foldedPad[other] = ops[padIndex].in[0]
                skipped.insert(padIndex)
            }
        }

        // Steps in execution order: a conv with a folded add runs where the add stood.
        var planned: [(position: Int, op: Int)] = []
        for (index, op) in ops.enumerated() where !skipped.contains(index) {
            if op.op == "reshape" {
                aliases[op.out] = op.in[0]
                continue
            }
            planned.append((foldedAdd[index] ?? index, index))
        }
        planned.sort { $0.position < $1.position }

        func padded(_ c: Int) -> Int { (c + 7) / 8 * 8 }
        var tensorStride: [Int: Int] = [:]
        for (id, s) in shapes { tensorStride[id] = id == file.inputTensor ? s.c : padded(s.c) }

        var steps: [Step] = []
        var patchLength = 0
        var packed: [Int: (weights: [Float], bias: [Float])] = [:]
        func reuse(_ index: Int, _ make: () -> (weights: [Float], bias: [Float])) -> (weights: [Float], bias: [Float]) {
            let result = template?.packed[index] ?? make()
            packed[index] = result
            return result
        }
        var produced: [Int] = []   // per step: the tensor it writes
        var consumed: [[Int]] = [] // per step: the tensors it reads
        for (_, index) in planned {
            let op = ops[index]
            let x = resolve(op.in[0])
            guard let inShape = shapes[x], let inStride = tensorStride[x] else { throw unsupported("op \(index) reads an unknown tensor") }
            let relu = op.activation == "relu"
            switch op.op {
            case "conv":
                guard let k = op.kernel, k.count == 2, k[0] == k[1], let ws = op.weights_shape, ws.count == 4,
                      ws[1] == k[0], ws[2] == k[1], ws[3] == inShape.c else { throw unsupported("op \(index): convolution shape") }
                let outChannels = ws[0]
                let w = file.slice(op.weights), b = file.slice(op.bias)
                guard w.count == ws.reduce(1, *), b.count == outChannels else { throw unsupported("op \(index): weight count") }
                let stride = op.stride ?? 1
                var out = op.out
                if k[0] == 1 && stride == 1 {
                    var residual: Int?
                    var reluAfter = false
                    if let addIndex = foldedAdd[index] {
                        let add = ops[addIndex]
                        let other = add.in[0] == op.out ? add.in[1] : add.in[0]
                        residual = foldedPad[other] ?? resolve(other)
                        reluAfter = add.activation == "relu"
                        out = add.out
                        shapes[out] = shapes[op.out]
                        tensorStride[out] = padded(outChannels)
                    }
                    let p = reuse(index) {
                        (Self.packPointwise(w, outChannels: outChannels, inChannels: inShape.c, inStride: inStride),
                         Self.padBias(b, to: padded(outChannels)))
                    }
                    steps.append(.pointwise(input: x, output: out, weights: p.weights, bias: p.bias,
                                            reluBeforeAdd: relu, residual: residual, reluAfterAdd: reluAfter))
                    consumed.append([x] + (residual.map { [$0] } ?? []))
                } else {
                    guard let outShape = shapes[op.out] else { throw unsupported("op \(index): output shape") }
                    let (padTop, outH) = try Self.samePadding(inShape.h, kernel: k[0], stride: stride, padding: op.padding)
                    let (padLeft, outW) = try Self.samePadding(inShape.w, kernel: k[1], stride: stride, padding: op.padding)
                    guard outH == outShape.h, outW == outShape.w else { throw unsupported("op \(index): output size") }
                    patchLength = max(patchLength, NetworkKernels.convolutionPixels * k[0] * k[1] * inStride)
                    let p = reuse(index) {
                        (Self.packGeneral(w, outChannels: outChannels, kernel: k[0], inChannels: inShape.c, inStride: inStride),
                         Self.padBias(b, to: padded(outChannels)))
                    }
                    steps.append(.convolution(input: x, output: out, weights: p.weights, bias: p.bias,
                                              kernel: k[0], stride: stride, padTop: padTop, padLeft: padLeft, relu: relu))
                    consumed.append([x])
                }
                produced.append(out)
            case "depthwise":
                guard op.kernel == [3, 3], let ws = op.weights_shape, ws == [1, 3, 3, inShape.c],
                      let outShape = shapes[op.out], outShape.c == inShape.c else { throw unsupported("op \(index): depthwise shape") }
                let stride = op.stride ?? 1
                let (padTop, outH) = try Self.samePadding(inShape.h, kernel: 3, stride: stride, padding: op.padding)
                let (padLeft, outW) = try Self.samePadding(inShape.w, kernel: 3, stride: stride, padding: op.padding)
                guard outH == outShape.h, outW == outShape.w else { throw unsupported("op \(index): output size") }
                let w = file.slice(op.weights), b = file.slice(op.bias)
                guard w.count == 9 * inShape.c, b.count == inShape.c else { throw unsupported("op \(index): weight count") }
                let p = reuse(index) {
                    var taps = [Float](repeating: 0, count: 9 * inStride)
                    for tap in 0..<9 { for c in 0..<inShape.c { taps[tap * inStride + c] = w[w.startIndex + tap * inShape.c + c] } }
                    return (taps, Self.padBias(b, to: inStride))
                }
                steps.append(.depthwise(input: x, output: op.out, weights: p.weights, bias: p.bias,
                                        stride: stride, padTop: padTop, padLeft: padLeft, relu: relu))
                consumed.append([x]); produced.append(op.out)
            case "maxpool":
                guard op.size == [2, 2], op.stride == 2, let outShape = shapes[op.out],
                      outShape.h == (inShape.h + 1) / 2, outShape.w == (inShape.w + 1) / 2, outShape.c == inShape.c
                else { throw unsupported("op \(index): only 2x2 stride-2 pooling is supported") }
                steps.append(.maxPool(input: x, output: op.out))
                consumed.append([x]); produced.append(op.out)
            case "resize_bilinear":
                guard op.align_corners != true, op.half_pixel_centers == true, let outShape = shapes[op.out], outShape.c == inShape.c
                else { throw unsupported("op \(index): only half-pixel-centre bilinear resizing is supported") }
                steps.append(.resize(input: x, output: op.out))
                consumed.append([x]); produced.append(op.out)
            case "add":
                let y = resolve(op.in[1])
                guard let a = shapes[x], let b = shapes[y], a.h == b.h, a.w == b.w, a.c == b.c else { throw unsupported("op \(index): add shapes") }
                steps.append(.add(a: x, b: y, output: op.out, relu: relu))
                consumed.append([x, y]); produced.append(op.out)
            case "pad_channels":
                guard let outShape = shapes[op.out], outShape.c == inShape.c + (op.before ?? 0) + (op.after ?? 0) else {
                    throw unsupported("op \(index): channel padding")
                }
                steps.append(.padChannels(input: x, output: op.out, before: op.before ?? 0))
                consumed.append([x]); produced.append(op.out)
            default:
                throw unsupported("op \(index) is \(op.op)")
            }
        }

        // Buffer slots: a tensor's slot is free again after its last reader; outputs are kept.
        var lastRead: [Int: Int] = [:]
        for (s, ids) in consumed.enumerated() { for id in ids { lastRead[id] = s } }
        let kept = Set(file.outputs.values.map(resolve))
        var layouts: [Int: TensorLayout] = [:]
        var slotSizes: [Int] = []
        var free: [Int] = []
        func allocate(_ id: Int) throws(FaceAnalysisError) {
            guard let s = shapes[id], let stride = tensorStride[id] else { throw unsupported("tensor \(id) has no shape") }
            let floats = s.h * s.w * stride
            let slot: Int
            if let i = free.firstIndex(where: { slotSizes[$0] >= floats }) {
                slot = free.remove(at: i)
            } else {
                slot = slotSizes.count
                slotSizes.append(floats)
            }
            layouts[id] = TensorLayout(height: s.h, width: s.w, channels: s.c, stride: stride, slot: slot)
        }
        try allocate(file.inputTensor)
        for (s, out) in produced.enumerated() {
            try allocate(out)
            for id in Set(consumed[s]) where lastRead[id] == s && !kept.contains(id) {
                if let slot = layouts[id]?.slot { free.append(slot) }
            }
        }
        for role in ["regressors", "classificators"] {
            guard let id = file.outputs[role], layouts[resolve(id)] != nil else { throw unsupported("the \(role) output is never computed") }
        }
        self.layouts = layouts
        self.steps = steps
        self.slotSizes = slotSizes
        self.patchLength = patchLength
        self.packed = packed
        var resolvedOutputs: [String: Int] = [:]
        for (role, id) in file.outputs { resolvedOutputs[role] = resolve(id) }
        self.outputs = resolvedOutputs
    }

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

/// One thread's activation buffers for a `ConvolutionalNetwork`. Used by one caller at a time (it
/// may pass between threads, as `BlazeFace`'s pool hands it on), and reused for every image.
public final class NetworkWorkspace: @unchecked Sendable {
    /// Which compiled kernels run the network.
    public enum Kernels: String, Sendable, CaseIterable {
        /// The baseline x86-64 build: runs on any processor.
        case portable
        /// AVX2 + FMA: about twice as fast; only where the processor has them.
        case avx2
        /// `avx2` where supported, else `portable`.
        public static var best: Kernels { AVX2Kernels.isSupported ? .avx2 : .portable }
        /// Whether this processor can run these kernels.
        public var isSupported: Bool { self == .portable || AVX2Kernels.isSupported }
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
        layOut()
    }

    deinit {
        UnsafeMutableRawPointer(arena).deallocate()
        patch.deallocate()
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
        network = plan
        layOut()
    }

    /// The floats this workspace holds.
    public var floats: Int { capacity + patchCapacity }

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
        case .portable: for step in network.steps { execute(step, with: PortableKernels.self) }
        case .avx2: for step in network.steps { execute(step, with: AVX2Kernels.self) }
        }
    }

    /// Runs every step on the current input and returns each step's kind, output size and
    /// nanoseconds (monotonic clock), for `photodrain bench` and kernel work.
    public func profile() -> [(step: String, nanoseconds: UInt64)] {
        var result: [(String, UInt64)] = []
        for step in network.steps {
            let start = SystemCalls.monotonicNanoseconds()
            switch kernels {
            case .portable: execute(step, with: PortableKernels.self)
            case .avx2: execute(step, with: AVX2Kernels.self)
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

    private func tensor(_ id: Int) -> (UnsafeMutablePointer<Float>, ConvolutionalNetwork.TensorLayout) {
        let layout = network.layouts[id]!
        return (slots[layout.slot], layout)
    }

    private func execute<K: NetworkKernelSet>(_ step: ConvolutionalNetwork.Step, with _: K.Type) {
        switch step {
        case let .pointwise(input, output, weights, bias, reluBeforeAdd, residual, reluAfterAdd):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
            var epilogue = NetworkKernels.Epilogue(reluBeforeAdd: reluBeforeAdd, residual: nil, residualStride: 0, reluAfterAdd: reluAfterAdd)
            if let residual {
                let (r, rl) = tensor(residual)
                epilogue.residual = UnsafePointer(r)
                epilogue.residualStride = rl.stride
            }
            weights.withUnsafeBufferPointer { w in
                bias.withUnsafeBufferPointer { b in
                    K.pointwise(input: x, inStride: xl.stride, pixels: xl.pixels, weights: w.baseAddress!,
                                             bias: b.baseAddress!, output: y, outStride: yl.stride, epilogue: epilogue)
                }
            }
        case let .depthwise(input, output, weights, bias, stride, padTop, padLeft, relu):
            let (x, xl) = tensor(input)
            let (y, yl) = tensor(output)
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
