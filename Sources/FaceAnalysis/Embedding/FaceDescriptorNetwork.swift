import CNNKernels

/// dlib's ResNet face descriptor (`Models/face-embedding.pdnn`, see `Models/face-embedding.md`): a
/// 150x150 RGB `FaceChip` in, a 128-d descriptor out, with dlib's own values (not normalised), so
/// dlib's rule holds: two descriptors closer than `sameFaceDistance` (0.6, Euclidean) are the same
/// person.
///
/// Immutable and `Sendable`: load it once and share it. Each thread runs it through its own
/// `FaceDescriptorWorkspace` (activation buffers), or lets `embedding(chip:)` make one per call.
/// The convolutions (the affine layers already folded in by the converter) run on the chosen kernel
/// set's general convolution, as BlazeFace's first layer does; the cheap steps are
/// `EmbeddingKernels`, the same code for every set.
public final class FaceDescriptorNetwork: Sendable {
    /// The shipped file's name (where it is found is the caller's business: `ModelSearch` in Drain).
    public static let fileName = "face-embedding.pdnn"
    /// The chip's side in pixels.
    public static let chipSize = 150
    /// Values per descriptor.
    public static let dimensions = 128
    /// dlib's threshold: descriptors of one person lie within this Euclidean distance.
    public static let sameFaceDistance: Float = 0.6

    /// The weight file's name and identifier (`name@sha8`).
    public let name: String
    public let identifier: String

    typealias Shape = EmbeddingKernels.Shape

    /// The arithmetic of the convolutions.
    public enum Precision: String, Sendable, CaseIterable {
        /// Float throughout, as the weights were converted.
        case fp32
        /// Every convolution on the 16-bit integer kernels (`QuantizedConvolution`): activations in
        /// 10 bits per tensor, weights in up to 15 bits per output channel, exact Int32 sums; about
        /// twice as fast as Float with AVX-512 VNNI, and within 0.003 of dlib on the parity chips.
        /// int8 proper (8-bit weights and activations) was measured 0.011-0.017 away: past the
        /// parity bar of 0.01 (`Models/face-embedding.md`).
        case int16
    }

    /// The precision to run at unless told otherwise: int16, or fp32 on a processor without AVX2,
    /// where the integer kernels are plain Swift and slower than the Float ones.
    public static var preferredPrecision: Precision { preferredPrecision(for: .best) }

    /// The precision to run with `kernels`: int16, or fp32 with the portable set.
    public static func preferredPrecision(for kernels: NetworkWorkspace.Kernels) -> Precision {
        kernels == .portable ? .fp32 : .int16
    }

    enum Step: Sendable {
        case convolution(input: Int, output: Int, weights: [Float], bias: [Float], kernel: Int, stride: Int, pad: Int, relu: Bool)
        /// `residual`: a tensor of the output's shape added after the ReLU (then `reluAfterAdd`),
        /// the residual add that followed the convolution, fused.
        case integerConvolution(input: Int, output: Int, convolution: QuantizedConvolution, relu: Bool,
                                residual: Int?, reluAfterAdd: Bool)
        case maxPool(input: Int, output: Int, size: Int, stride: Int)
        case averagePool(input: Int, output: Int)
        case add(a: Int, b: Int, output: Int, relu: Bool)
        case mean(input: Int, output: Int)
        case fullyConnected(input: Int, output: Int, weights: [Float])
    }

    let steps: [Step]
    /// Every tensor's shape, by id; tensor 0 is the input.
    let shapes: [Int: Shape]
    /// Which buffer slot each tensor lives in, and the slots' sizes in floats.
    let slots: [Int: Int]
    let slotSizes: [Int]
    let output: Int
    /// The input's per-channel mean and scale: (value - mean) * scale.
    let inputMean: SIMD4<Float>
    let inputScale: Float
    /// Scratch floats the general convolution needs for its gathered patches.
    let patchLength: Int
    /// The convolutions' arithmetic.
    public let precision: Precision
    /// Scratch Int16 values the integer convolutions need: a quantised input tensor, and one band
    /// of gathered patches.
    let quantizedLength: Int
    let integerPatchLength: Int

    /// Loads and plans the network at `path`; throws what `NetworkFile.load` throws, and
    /// `malformedModel` for a file that is not this kind of network.
    public convenience init(contentsOf path: String,
                            precision: Precision = FaceDescriptorNetwork.preferredPrecision) throws(FaceAnalysisError) {
        let file = try NetworkFile.load(path)
        do {
            try self.init(file: file, precision: precision)
        } catch {
            throw error.about(path)
        }
    }

    /// Plans `file`'s graph; throws `malformedModel` for an op, shape or layout it cannot run.
    public init(file: NetworkFile, precision: Precision = FaceDescriptorNetwork.preferredPrecision) throws(FaceAnalysisError) {
        func unsupported(_ why: String) -> FaceAnalysisError {
            FaceAnalysisError(.malformedModel, "the face descriptor network cannot be run: \(why)")
        }
        let size = Self.chipSize
        guard file.version == 2, file.inputShape == [size, size, 3], file.inputTensor == 0,
              let mean = file.inputMean, mean.count == 3, let scale = file.inputScale else {
            throw unsupported("its input is not a \(size)x\(size) RGB chip with a mean and scale")
        }
        guard let output = file.outputs["embedding"] else { throw unsupported("no embedding output") }
        var shapes: [Int: Shape] = [0: Shape(height: size, width: size, channels: 3)]
        var steps: [Step] = []
        var patchLength = 0
        var quantizedLength = 0, integerPatchLength = 0
        for (index, op) in file.operations.enumerated() {
            guard op.in.allSatisfy({ shapes[$0] != nil }), shapes[op.out] == nil, let x = shapes[op.in[0]] else {
                throw unsupported("op \(index) (\(op.op)) reads a tensor not yet written or writes one twice")
            }
            let relu = op.activation == "relu"
            let out: Shape
            switch op.op {
            case "conv":
                guard let k = op.kernel, k.count == 2, k[0] == k[1], let stride = op.stride, stride >= 1,
                      let pad = op.pad, pad.count == 2, pad[0] == pad[1], pad[0] >= 0,
                      let ws = op.weights_shape, ws.count == 4, ws[1] == k[0], ws[2] == k[0], ws[3] == x.channels,
                      ws[0] % 8 == 0, x.channels == 3 || x.channels % 8 == 0 else { throw unsupported("op \(index): convolution shape") }
                let w = file.slice(op.weights), b = file.slice(op.bias)
                guard w.count == ws.reduce(1, *), b.count == ws[0] else { throw unsupported("op \(index): weight count") }
                out = Shape(height: (x.height + 2 * pad[0] - k[0]) / stride + 1, width: (x.width + 2 * pad[0] - k[0]) / stride + 1,
                            channels: ws[0])
                guard x.height + 2 * pad[0] >= k[0], x.width + 2 * pad[0] >= k[0] else { throw unsupported("op \(index): kernel larger than its input") }
                let pixelInput = op.in[0] == 0
                if precision == .int16, ws[0] % NetworkKernels.int8Block == 0, !pixelInput || x.channels == mean.count {
                    let convolution = QuantizedConvolution(weights: w, bias: b, outChannels: ws[0], kernel: k[0], inChannels: x.channels,
                                                           stride: stride, pad: pad[0],
                                                           pixels: pixelInput ? (mean, scale) : nil)
                    quantizedLength = max(quantizedLength, x.floats)
                    integerPatchLength = max(integerPatchLength, convolution.bandRows(outWidth: out.width) * out.width * convolution.inStride)
                    steps.append(.integerConvolution(input: op.in[0], output: op.out, convolution: convolution, relu: relu,
                                                     residual: nil, reluAfterAdd: false))
                    break
                }
                patchLength = max(patchLength, NetworkKernels.convolutionPixels * k[0] * k[0] * x.channels)
                steps.append(.convolution(input: op.in[0], output: op.out,
                                          weights: ConvolutionalNetwork.packGeneral(w, outChannels: ws[0], kernel: k[0],
                                                                                    inChannels: x.channels, inStride: x.channels),
                                          bias: Array(b), kernel: k[0], stride: stride, pad: pad[0], relu: relu))
            case "maxpool", "avgpool":
                guard let s = op.size, s.count == 2, s[0] == s[1], let stride = op.stride, op.pad ?? [0, 0] == [0, 0],
                      x.height >= s[0], x.width >= s[0], x.channels % 8 == 0,
                      op.op == "maxpool" || (s[0] == 2 && stride == 2) else { throw unsupported("op \(index): pooling") }
                out = Shape(height: (x.height - s[0]) / stride + 1, width: (x.width - s[0]) / stride + 1, channels: x.channels)
                steps.append(op.op == "maxpool" ? .maxPool(input: op.in[0], output: op.out, size: s[0], stride: stride)
                                                : .averagePool(input: op.in[0], output: op.out))
            case "add":
                guard op.in.count == 2, let y = shapes[op.in[1]] else { throw unsupported("op \(index): add") }
                out = Shape(height: max(x.height, y.height), width: max(x.width, y.width), channels: max(x.channels, y.channels))
                steps.append(.add(a: op.in[0], b: op.in[1], output: op.out, relu: relu))
            case "mean":
                guard x.channels % 8 == 0 else { throw unsupported("op \(index): mean") }
                out = Shape(height: 1, width: 1, channels: x.channels)
                steps.append(.mean(input: op.in[0], output: op.out))
            case "fc":
                guard let ws = op.weights_shape, ws.count == 2, ws[1] == x.floats, !relu else { throw unsupported("op \(index): fully connected shape") }
                let w = file.slice(op.weights)
                guard w.count == ws[0] * ws[1] else { throw unsupported("op \(index): weight count") }
                out = Shape(height: 1, width: 1, channels: ws[0])
                steps.append(.fullyConnected(input: op.in[0], output: op.out, weights: Array(w)))
            default:
                throw unsupported("op \(index) is \(op.op)")
            }
            guard out.height >= 1, out.width >= 1 else { throw unsupported("op \(index): empty output") }
            shapes[op.out] = out
        }
        guard let outShape = shapes[output], outShape.floats == Self.dimensions else {
            throw unsupported("the embedding output is not \(Self.dimensions) values")
        }
        steps = Self.fusingResidualAdds(steps, shapes: shapes, kept: output)
        // Slots: a convolution's folded residual read for the last time takes the sum in place.
        let planned = steps.map { step in
            var overwrites: [Int] = []
            if case let .integerConvolution(input, _, _, _, residual?, _) = step, residual != input { overwrites = [residual] }
            return SlotPlan.Step(reads: step.inputs, output: step.output, overwrites: overwrites)
        }
        let plan = try SlotPlan(planned, input: 0, kept: [output], floats: { shapes[$0]?.floats }) { shapes[$0] == shapes[$1] }
        name = file.name
        identifier = file.identifier
        self.steps = steps
        self.shapes = shapes
        slots = plan.slots
        slotSizes = plan.slotSizes
        self.output = output
        inputMean = SIMD4(mean[0], mean[1], mean[2], 0)
        inputScale = scale
        self.patchLength = max(patchLength, 8)
        self.precision = precision
        self.quantizedLength = (quantizedLength + 7) / 8 * 8
        self.integerPatchLength = integerPatchLength
    }

    /// The descriptor of `chip`, computed in a workspace made for this call with the fastest
    /// kernels this processor has. A caller embedding many faces keeps a `FaceDescriptorWorkspace`
    /// and calls `embedding(chip:in:)`.
    public func embedding(chip: FaceChip) -> [Float] {
        embedding(chip: chip, in: FaceDescriptorWorkspace(network: self))
    }

    /// The descriptor of `chip`, computed in `workspace` (which must be this network's).
    public func embedding(chip: FaceChip, in workspace: FaceDescriptorWorkspace) -> [Float] {
        precondition(workspace.network === self, "a workspace runs the network it was made for")
        return workspace.run(chip)
    }

    /// `steps` with each integer convolution whose output only a residual add of equal shapes
    /// reads (the second convolution of a block that keeps its size) writing the add's sum
    /// itself, in its epilogue: the same Float addition, one pass over the tensors fewer.
    static func fusingResidualAdds(_ steps: [Step], shapes: [Int: Shape], kept: Int) -> [Step] {
        var readers: [Int: Int] = [:]
        for step in steps { for id in Set(step.inputs) { readers[id, default: 0] += 1 } }
        var fused: [Step] = []
        var index = 0
        while index < steps.count {
            if index + 1 < steps.count,
               case let .integerConvolution(input, out, convolution, relu, nil, _) = steps[index],
               case let .add(a, b, sum, reluAfterAdd) = steps[index + 1], a != b, a == out || b == out,
               out != kept, readers[out] == 1, shapes[a] == shapes[b], shapes[sum] == shapes[out] {
                fused.append(.integerConvolution(input: input, output: sum, convolution: convolution, relu: relu,
                                                 residual: a == out ? b : a, reluAfterAdd: reluAfterAdd))
                index += 2
            } else {
                fused.append(steps[index])
                index += 1
            }
        }
        return fused
    }

    /// The Euclidean distance between two descriptors; below `sameFaceDistance`, dlib calls them
    /// the same person.
    public static func distance(_ a: [Float], _ b: [Float]) -> Float {
        precondition(a.count == b.count, "descriptors of different lengths")
        var sum: Float = 0
        for i in a.indices { sum += (a[i] - b[i]) * (a[i] - b[i]) }
        return sum.squareRoot()
    }
}

extension FaceDescriptorNetwork.Step {
    var inputs: [Int] {
        switch self {
        case .integerConvolution(let input, _, _, _, let residual?, _):
            return [input, residual]
        case .convolution(let input, _, _, _, _, _, _, _), .integerConvolution(let input, _, _, _, _, _),
             .maxPool(let input, _, _, _), .averagePool(let input, _),
             .mean(let input, _), .fullyConnected(let input, _, _):
            return [input]
        case .add(let a, let b, _, _):
            return [a, b]
        }
    }

    var output: Int {
        switch self {
        case .convolution(_, let output, _, _, _, _, _, _), .integerConvolution(_, let output, _, _, _, _),
             .maxPool(_, let output, _, _), .averagePool(_, let output),
             .mean(_, let output), .fullyConnected(_, let output, _), .add(_, _, let output, _):
            return output
        }
    }
}
