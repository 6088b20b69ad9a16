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

    /// Buffer slots: a tensor's slot is free again after its last reader; `kept` tensors (the
    /// outputs) keep theirs. A tensor takes the smallest free slot it fits, else the largest free
    /// one grown to fit, else a new one (first fit gave a 448x448 plan 23 MB of slots, best fit
    /// 20 MB); an `unwritten` one takes an empty slot. A residual add read for the last time
    /// writes its sum over the residual: each output value reads only the residual value at its
    /// own place, and the lines the step reads are the lines it writes, so the store finds them in
    /// cache instead of fetching a second tensor's lines to overwrite (a 224x224x32 Float tensor
    /// is 6.4 MB; the slots of that plan 20.4 -> 11.5 MB).
    static func planSlots(_ steps: [Step], input: Int, kept: Set<Int>, unwritten: Set<Int>,
                          shapes: [Int: (h: Int, w: Int, c: Int)], strides: [Int: Int])
        throws(FaceAnalysisError) -> (layouts: [Int: TensorLayout], slotSizes: [Int]) {
        var lastRead: [Int: Int] = [:]
        for (s, step) in steps.enumerated() { for id in step.reads { lastRead[id] = s } }
        var layouts: [Int: TensorLayout] = [:]
        var slotSizes: [Int] = []
        var free: [Int] = []
        func allocate(_ id: Int) throws(FaceAnalysisError) {
            guard let s = shapes[id], let stride = strides[id] else {
                throw FaceAnalysisError(.malformedModel, "the network cannot be run: tensor \(id) has no shape")
            }
            let floats = unwritten.contains(id) ? 0 : s.h * s.w * stride
            let slot: Int
            if floats == 0 {
                slot = slotSizes.count
                slotSizes.append(0)
            } else if let i = free.indices.filter({ slotSizes[free[$0]] >= floats }).min(by: { slotSizes[free[$0]] < slotSizes[free[$1]] }) {
                slot = free.remove(at: i)
            } else if let i = free.indices.max(by: { slotSizes[free[$0]] < slotSizes[free[$1]] }) {
                slot = free.remove(at: i)
                slotSizes[slot] = floats
            } else {
                slot = slotSizes.count
                slotSizes.append(floats)
            }
            layouts[id] = TensorLayout(height: s.h, width: s.w, channels: s.c, stride: stride, slot: slot)
        }
        try allocate(input)
        for (s, step) in steps.enumerated() {
            let out = step.output
            var inPlace: Int?
            switch step {
            case let .pointwise(x, _, _, _, _, residual?, _), let .pointwiseInt8(x, _, _, _, residual?, _):
                if residual != x { inPlace = residual }
            case let .add(a, b, _, _):
                inPlace = a
                if lastRead[a] != s || kept.contains(a) { inPlace = b }
            default: break
            }
            if let r = inPlace, lastRead[r] == s, !kept.contains(r), r != input, !unwritten.contains(out),
               let residual = layouts[r], let shape = shapes[out], let stride = strides[out],
               residual.height == shape.h, residual.width == shape.w, residual.stride == stride {
                layouts[out] = TensorLayout(height: shape.h, width: shape.w, channels: shape.c, stride: stride, slot: residual.slot)
            } else {
                inPlace = nil
                try allocate(out)
            }
            for id in Set(step.reads) where id != inPlace && lastRead[id] == s && !kept.contains(id) {
                if let slot = layouts[id]?.slot, slotSizes[slot] > 0 { free.append(slot) }
            }
        }
        return (layouts, slotSizes)
    }
}
