import CNNKernels

/// One step of a plan, in execution order: which kernel runs, on which tensors (by id), with
/// which packed weights.
extension ConvolutionalNetwork {
    enum Step: Sendable {
        case pointwise(input: Int, output: Int, weights: [Float], bias: [Float],
                       reluBeforeAdd: Bool, residual: Int?, reluAfterAdd: Bool)
        case pointwiseInt8(input: Int, output: Int, weights: QuantizedPointwise,
                           reluBeforeAdd: Bool, residual: Int?, reluAfterAdd: Bool)
        case depthwise(input: Int, output: Int, weights: [Float], bias: [Float], stride: Int,
                       padTop: Int, padLeft: Int, relu: Bool)
        case convolution(input: Int, output: Int, weights: [Float], bias: [Float], kernel: Int, stride: Int,
                         padTop: Int, padLeft: Int, relu: Bool)
        case maxPool(input: Int, output: Int)
        case resize(input: Int, output: Int)
        case add(a: Int, b: Int, output: Int, relu: Bool)
        case padChannels(input: Int, output: Int, before: Int)

        /// The tensor the step writes.
        var output: Int {
            switch self {
            case let .pointwise(_, output, _, _, _, _, _), let .pointwiseInt8(_, output, _, _, _, _),
                 let .depthwise(_, output, _, _, _, _, _, _), let .convolution(_, output, _, _, _, _, _, _, _),
                 let .maxPool(_, output), let .resize(_, output), let .add(_, _, output, _), let .padChannels(_, output, _):
                output
            }
        }

        /// The tensors the step reads: its input, and a residual or second addend.
        var reads: [Int] {
            switch self {
            case let .pointwise(input, _, _, _, _, residual, _), let .pointwiseInt8(input, _, _, _, residual, _):
                [input] + (residual.map { [$0] } ?? [])
            case let .depthwise(input, _, _, _, _, _, _, _), let .convolution(input, _, _, _, _, _, _, _, _),
                 let .maxPool(input, _), let .resize(input, _), let .padChannels(input, _, _):
                [input]
            case let .add(a, b, _, _):
                [a, b]
            }
        }
    }
}
