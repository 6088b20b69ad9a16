/// Which buffer slot each tensor of a network lives in: the plan BlazeFace's network
/// (`ConvolutionalNetwork`) and the face descriptor (`FaceDescriptorNetwork`) both run on, made
/// once when the network is loaded.
///
/// A tensor's slot is free again after its last reader; `kept` tensors (the outputs) keep theirs.
/// A tensor takes the smallest free slot it fits, else the largest free one grown to fit, else a
/// new one (first fit gave a 448x448 BlazeFace plan 23 MB of slots, best fit 20 MB); an
/// `unwritten` one takes an empty slot. A step that adds a residual read for the last time writes
/// its sum over that residual: each output value reads only the residual value at its own place,
/// and the lines the step reads are the lines it writes, so the store finds them in cache instead
/// of fetching a second tensor's lines to overwrite (a 224x224x32 Float tensor is 6.4 MB; the
/// slots of that plan 20.4 -> 11.5 MB).
struct SlotPlan {
    /// A step as the plan sees it.
    struct Step {
        /// The tensors it reads, and the one it writes.
        var reads: [Int]
        var output: Int
        /// The residuals it may write over, in order of preference: the first one this step reads
        /// for the last time (and that is not kept), else the last, if its layout is the output's.
        var overwrites: [Int] = []
    }

    /// Each tensor's slot, and each slot's size in floats (0: a slot of an unwritten tensor).
    let slots: [Int: Int]
    let slotSizes: [Int]

    /// Plans `steps`, whose first input is `input`. `floats(id)` is a tensor's size in floats (nil:
    /// a tensor without a shape, which throws `malformedModel`); `sameLayout(a, b)` whether `b`
    /// may be written over `a` value for value.
    init(_ steps: [Step], input: Int, kept: Set<Int>, unwritten: Set<Int> = [],
         floats: (Int) -> Int?, sameLayout: (Int, Int) -> Bool) throws(FaceAnalysisError) {
        var lastRead: [Int: Int] = [:]
        for (s, step) in steps.enumerated() { for id in step.reads { lastRead[id] = s } }
        var slots: [Int: Int] = [:]
        var slotSizes: [Int] = []
        var free: [Int] = []
        func allocate(_ id: Int) throws(FaceAnalysisError) {
            guard let size = floats(id) else {
                throw FaceAnalysisError(.malformedModel, "the network cannot be run: tensor \(id) has no shape")
            }
            let need = unwritten.contains(id) ? 0 : size
            let slot: Int
            if need == 0 {
                slot = slotSizes.count
                slotSizes.append(0)
            } else if let i = free.indices.filter({ slotSizes[free[$0]] >= need }).min(by: { slotSizes[free[$0]] < slotSizes[free[$1]] }) {
                slot = free.remove(at: i)
            } else if let i = free.indices.max(by: { slotSizes[free[$0]] < slotSizes[free[$1]] }) {
                slot = free.remove(at: i)
                slotSizes[slot] = need
            } else {
                slot = slotSizes.count
                slotSizes.append(need)
            }
            slots[id] = slot
        }
        try allocate(input)
        for (s, step) in steps.enumerated() {
            let out = step.output
            var inPlace = step.overwrites.first { lastRead[$0] == s && !kept.contains($0) } ?? step.overwrites.last
            if let r = inPlace, lastRead[r] == s, !kept.contains(r), r != input, !unwritten.contains(out),
               let slot = slots[r], floats(out) != nil, sameLayout(r, out) {
                slots[out] = slot
            } else {
                inPlace = nil
                try allocate(out)
            }
            for id in Set(step.reads) where id != inPlace && lastRead[id] == s && !kept.contains(id) {
                if let slot = slots[id], slotSizes[slot] > 0 { free.append(slot) }
            }
        }
        self.slots = slots
        self.slotSizes = slotSizes
    }
}
