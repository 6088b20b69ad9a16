import CNNKernels

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
    /// Input channels (padded) from which an int8 plan runs a 1x1 convolution in int8: with 8,
    /// the step is bound by its 32 Float outputs and residual per pixel, and int8 gained nothing
    /// (a 448x448 inference took 8.4-8.5 ms either way), so those two stay Float.
    static let int8MinimumInputs = 16
    /// The arithmetic of the 1x1 convolutions.
    public let precision: NetworkPrecision
    /// Quantised 1x1 convolutions by op index (int8 plans), shared like `packed`.
    let quantized: [Int: QuantizedPointwise]
    /// The op index of each step in `steps` (what a calibration records ranges by).
    let stepOps: [Int]
    /// Bytes of quantised activations the largest int8 step's input takes (2 per value, enough
    /// for either layout).
    let quantizedBytes: Int
    /// Depthwise steps (by step index) that write the quantised input of the int8 1x1 convolution
    /// that is their only reader, with its quantisation; and those convolutions, which then do not
    /// quantise. Saves writing the Floats and the pass that quantises them.
    let depthwiseQuantization: [Int: NetworkKernels.Quantization]
    let prequantized: Set<Int>

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
    /// With `precision` int8, every 1x1 convolution whose input `calibration` has a range for runs
    /// on the int8 kernels (throws `invalidParameter` without a calibration); the rest stay Float.
    public init(file: NetworkFile, inputSize: (height: Int, width: Int)? = nil,
                sharingWeightsWith template: ConvolutionalNetwork? = nil,
                precision: NetworkPrecision = .fp32, calibration: NetworkCalibration? = nil) throws(FaceAnalysisError) {
        guard precision == .fp32 || calibration != nil else {
            throw FaceAnalysisError(.invalidParameter, "an int8 plan needs the activation ranges of a calibration")
        }
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
        var quantized: [Int: QuantizedPointwise] = [:]
        var stepOps: [Int] = []
        var quantizedBytes = 0
        for (_, index) in planned {
            let op = ops[index]
            stepOps.append(index)
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
                    // The heads (what writes an output) stay Float: their sums are the logits and box
                    // offsets. Quantised, they cost the verdict model a box on an animal photo and
                    // 2 photo labels of 230 on the labelled photos (held out).
                    let head = graphOutputs.contains(op.out)
                        || readers[op.out]?.contains { ops[$0].op == "reshape" && graphOutputs.contains(ops[$0].out) } == true
                    if precision == .int8, inStride >= Self.int8MinimumInputs, !head,
                       let q = calibration?.quantization(forOp: index) {
                        let weights = template?.quantized[index] ?? QuantizedPointwise(
                            weights: w, bias: b, outChannels: outChannels, inChannels: inShape.c, inStride: inStride, quantization: q)
                        quantized[index] = weights
                        quantizedBytes = max(quantizedBytes, 2 * inShape.h * inShape.w * inStride)
                        steps.append(.pointwiseInt8(input: x, output: out, weights: weights,
                                                    reluBeforeAdd: relu, residual: residual, reluAfterAdd: reluAfter))
                    } else {
                        let p = reuse(index) {
                            (Self.packPointwise(w, outChannels: outChannels, inChannels: inShape.c, inStride: inStride),
                             Self.padBias(b, to: padded(outChannels)))
                        }
                        steps.append(.pointwise(input: x, output: out, weights: p.weights, bias: p.bias,
                                                reluBeforeAdd: relu, residual: residual, reluAfterAdd: reluAfter))
                    }
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
                }
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
            case "maxpool":
                guard op.size == [2, 2], op.stride == 2, let outShape = shapes[op.out],
                      outShape.h == (inShape.h + 1) / 2, outShape.w == (inShape.w + 1) / 2, outShape.c == inShape.c
                else { throw unsupported("op \(index): only 2x2 stride-2 pooling is supported") }
                steps.append(.maxPool(input: x, output: op.out))
            case "resize_bilinear":
                guard op.align_corners != true, op.half_pixel_centers == true, let outShape = shapes[op.out], outShape.c == inShape.c
                else { throw unsupported("op \(index): only half-pixel-centre bilinear resizing is supported") }
                steps.append(.resize(input: x, output: op.out))
            case "add":
                let y = resolve(op.in[1])
                guard let a = shapes[x], let b = shapes[y], a.h == b.h, a.w == b.w, a.c == b.c else { throw unsupported("op \(index): add shapes") }
                steps.append(.add(a: x, b: y, output: op.out, relu: relu))
            case "pad_channels":
                guard let outShape = shapes[op.out], outShape.c == inShape.c + (op.before ?? 0) + (op.after ?? 0) else {
                    throw unsupported("op \(index): channel padding")
                }
                steps.append(.padChannels(input: x, output: op.out, before: op.before ?? 0))
            default:
                throw unsupported("op \(index) is \(op.op)")
            }
        }

        let kept = Set(file.outputs.values.map(resolve))
        let fused = Self.fusedDepthwiseStores(steps, kept: kept)
        let plan = try Self.planSlots(steps, input: file.inputTensor, kept: kept, unwritten: fused.unwritten,
                                      shapes: shapes, strides: tensorStride)
        for role in ["regressors", "classificators"] {
            guard let id = file.outputs[role], plan.layouts[resolve(id)] != nil else { throw unsupported("the \(role) output is never computed") }
        }
        depthwiseQuantization = fused.quantization
        prequantized = fused.readers
        layouts = plan.layouts
        slotSizes = plan.slotSizes
        self.steps = steps
        self.patchLength = patchLength
        self.packed = packed
        self.precision = precision
        self.quantized = quantized
        self.stepOps = stepOps
        self.quantizedBytes = quantizedBytes
        var resolvedOutputs: [String: Int] = [:]
        for (role, id) in file.outputs { resolvedOutputs[role] = resolve(id) }
        self.outputs = resolvedOutputs
    }
}
