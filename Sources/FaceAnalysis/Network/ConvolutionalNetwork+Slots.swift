import CNNKernels

/// Where a plan's tensors live: which depthwise steps store their reader's quantised input
/// directly, and the buffer slots every tensor is given. Done once, when the plan is made.
extension ConvolutionalNetwork {
    /// Depthwise steps that write the quantised input of the int8 1x1 convolution that is their
    /// only reader: the depthwise step's quantisation by step, the readers (which then skip their
    /// quantising pass), and the Float tensors never written (so they take no memory).
    static func fusedDepthwiseStores(_ steps: [Step], kept: Set<Int>)
        -> (quantization: [Int: NetworkKernels.Quantization], readers: Set<Int>, unwritten: Set<Int>) {
        var quantization: [Int: NetworkKernels.Quantization] = [:]
        var readers = Set<Int>()
        var unwritten = Set<Int>()
        var readerSteps: [Int: [Int]] = [:]
        for (t, step) in steps.enumerated() { for id in Set(step.reads) { readerSteps[id, default: []].append(t) } }
        for (s, step) in steps.enumerated() {
            // The reader must come before any other int8 step, which would overwrite the scratch.
            guard case let .depthwise(_, output, _, _, _, _, _, _) = step, !kept.contains(output),
                  let r = readerSteps[output], r.count == 1, let t = r.first, t > s,
                  case let .pointwiseInt8(input, _, q, _, residual, _) = steps[t], input == output, residual != output,
                  !steps[(s + 1)..<t].contains(where: { if case .pointwiseInt8 = $0 { true } else { false } }) else { continue }
            quantization[s] = q.quantization
            readers.insert(t)
            unwritten.insert(output)
        }
        return (quantization, readers, unwritten)
    }

    /// Buffer slots (`SlotPlan`): a 1x1 convolution's folded residual, or either addend of an
    /// `add`, read for the last time, takes the sum in its own slot.
    static func planSlots(_ steps: [Step], input: Int, kept: Set<Int>, unwritten: Set<Int>,
                          shapes: [Int: (h: Int, w: Int, c: Int)], strides: [Int: Int])
        throws(FaceAnalysisError) -> (layouts: [Int: TensorLayout], slotSizes: [Int]) {
        let planned = steps.map { step in
            var overwrites: [Int] = []
            switch step {
            case let .pointwise(x, _, _, _, _, residual?, _), let .pointwiseInt8(x, _, _, _, residual?, _):
                if residual != x { overwrites = [residual] }
            case let .add(a, b, _, _):
                overwrites = [a, b]
            default: break
            }
            return SlotPlan.Step(reads: step.reads, output: step.output, overwrites: overwrites)
        }
        func floats(_ id: Int) -> Int? {
            guard let s = shapes[id], let stride = strides[id] else { return nil }
            return s.h * s.w * stride
        }
        let plan = try SlotPlan(planned, input: input, kept: kept, unwritten: unwritten, floats: floats) { a, b in
            shapes[a]?.h == shapes[b]?.h && shapes[a]?.w == shapes[b]?.w && strides[a] == strides[b]
        }
        var layouts: [Int: TensorLayout] = [:]
        for (id, slot) in plan.slots {
            let s = shapes[id]!
            layouts[id] = TensorLayout(height: s.h, width: s.w, channels: s.c, stride: strides[id]!, slot: slot)
        }
        return (layouts, plan.slotSizes)
    }
}
