import PhotoDecoding
import Glibc

/// Evaluates a cascade over every window of one pyramid level, as OpenCV's
/// `CascadeClassifierInvoker` does, and collects the accepted windows.
///
/// Speed comes from three things. Feature corner offsets are recomputed once per level for that
/// level's table stride. For stump cascades the first stages run on eight neighbouring windows per
/// SIMD step, in the same float and double arithmetic OpenCV uses, and only the survivors are
/// finished one at a time. Every buffer is allocated once per image; the scan loop allocates nothing.
final class CascadeScanner {
    let model: CascadeModel
    /// Stages evaluated eight windows at a time before finishing survivors one by one.
    let vectorStages: Int

    // Per-node data in node order (a stump cascade has one node per tree).
    private let nodeFeature: [Int]
    private let nodeThreshold: [Float]
    private let stageThreshold: [Float]
    private let stageFirstTree: [Int]
    private let stageTreeCount: [Int]
    private let haarWeights: [Float]          // 3 per feature
    private var featureOffsets: [Int]         // 12 per Haar feature, 16 per LBP feature
    private var normOffsets = (0, 0, 0, 0)
    private let offsetsPerFeature: Int
    private let isStump: Bool
    private let normArea: Double

    var integral = IntegralImage()
    private let tilted: Bool
    private var levelPixels: [UInt8] = []
    private let resizeScratch = Resize.Scratch()
    private var rowState: [Int8] = []
    private var rowNorm: [Float] = []
    private var stride = 0

    /// Codes stored per window by the vector pass.
    private static let survived: Int8 = 2

    init(model: CascadeModel, vectorStages: Int? = nil) {
        self.model = model
        isStump = model.maxNodesPerTree == 1
        let tuned = getenv("FA_VS").flatMap { Int(String(cString: $0)) }
        self.vectorStages = isStump ? min(vectorStages ?? tuned ?? 2, model.stages.count) : 0
        nodeFeature = model.nodes.map(\.feature)
        nodeThreshold = model.nodes.map(\.threshold)
        stageThreshold = model.stages.map(\.threshold)
        stageFirstTree = model.stages.map(\.firstTree)
        stageTreeCount = model.stages.map(\.treeCount)
        var weights: [Float] = []
        for f in model.haarFeatures {
            for k in 0..<3 { weights.append(k < f.rects.count ? f.rects[k].weight : 0) }
        }
        haarWeights = weights
        offsetsPerFeature = model.featureType == .haar ? 12 : 16
        let featureCount = model.featureType == .haar ? model.haarFeatures.count : model.lbpFeatures.count
        featureOffsets = [Int](repeating: 0, count: featureCount * offsetsPerFeature)
        tilted = model.hasTiltedFeatures
        normArea = Double((model.windowWidth - 2) * (model.windowHeight - 2))
    }

    /// Resizes `image` (gray) to `levelWidth` x `levelHeight`, builds its tables and recomputes
    /// the feature offsets for the level's stride.
    func prepareLevel(_ image: Image, levelWidth: Int, levelHeight: Int, timings: inout DetectionTimings) {
        let start = SystemCalls.monotonicNanoseconds()
        let count = levelWidth * levelHeight
        if levelPixels.count < count { levelPixels = [UInt8](repeating: 0, count: count) }
        image.pixels.withUnsafeBufferPointer { src in
            levelPixels.withUnsafeMutableBufferPointer { dst in
                Resize.bilinear(src, width: image.width, height: image.height,
                                into: dst, width: levelWidth, height: levelHeight, scratch: resizeScratch)
            }
        }
        let resized = SystemCalls.monotonicNanoseconds()
        levelPixels.withUnsafeBufferPointer { pixels in
            integral.compute(UnsafeBufferPointer(rebasing: pixels[0..<count]), width: levelWidth, height: levelHeight, tilted: tilted)
        }
        let integrated = SystemCalls.monotonicNanoseconds()
        timings.resizeNanoseconds += resized - start
        timings.integralNanoseconds += integrated - resized
        stride = levelWidth + 1
        computeOffsets()
    }

    private func computeOffsets() {
        let step = stride
        let w = model.windowWidth, h = model.windowHeight
        normOffsets = (1 + step * 1, w - 1 + step * 1, 1 + step * (h - 1), w - 1 + step * (h - 1))
        switch model.featureType {
        case .haar:
            let tiltedBase = integral.tiltedOffset
            for (f, feature) in model.haarFeatures.enumerated() {
                for k in 0..<3 {
                    let base = f * 12 + k * 4
                    guard k < feature.rects.count else {
                        for c in 0..<4 { featureOffsets[base + c] = 0 }
                        continue
                    }
                    let r = feature.rects[k]
                    if feature.tilted {
                        featureOffsets[base] = tiltedBase + r.x + step * r.y
                        featureOffsets[base + 1] = tiltedBase + r.x - r.height + step * (r.y + r.height)
                        featureOffsets[base + 2] = tiltedBase + r.x + r.width + step * (r.y + r.width)
                        featureOffsets[base + 3] = tiltedBase + r.x + r.width - r.height + step * (r.y + r.width + r.height)
                    } else {
                        featureOffsets[base] = r.x + step * r.y
                        featureOffsets[base + 1] = r.x + r.width + step * r.y
                        featureOffsets[base + 2] = r.x + step * (r.y + r.height)
                        featureOffsets[base + 3] = r.x + r.width + step * (r.y + r.height)
                    }
                }
            }
        case .lbp:
            for (f, feature) in model.lbpFeatures.enumerated() {
                // A 4x4 grid of table corners spanning the 3x3 blocks.
                for gy in 0..<4 {
                    for gx in 0..<4 {
                        featureOffsets[f * 16 + gy * 4 + gx] = feature.x + gx * feature.width + step * (feature.y + gy * feature.height)
                    }
                }
            }
        }
    }

    /// Scans the prepared level: windows at (x, y) with x < `workingWidth`, y < `workingHeight`,
    /// stepping by `step` and skipping the next window after one rejected by the first stage.
    /// Accepted windows are appended in OpenCV's order, mapped back by `scale`.
    func scanLevel(workingWidth: Int, workingHeight: Int, step: Int, scale: Float, into out: inout [Detection]) {
        let winW = Int((Float(model.windowWidth) * scale).rounded(.toNearestOrEven))
        let winH = Int((Float(model.windowHeight) * scale).rounded(.toNearestOrEven))
        let positions = (workingWidth + step - 1) / step
        if rowState.count < positions + 16 {
            rowState = [Int8](repeating: 0, count: positions + 16)
            rowNorm = [Float](repeating: 0, count: positions + 16)
        }
        let sumBase = integral.sum.baseAddress!
        let squareBase = integral.squares.baseAddress!
        featureOffsets.withUnsafeBufferPointer { offsets in
        haarWeights.withUnsafeBufferPointer { weights in
        nodeFeature.withUnsafeBufferPointer { nodeFeature in
        nodeThreshold.withUnsafeBufferPointer { nodeThreshold in
        model.leaves.withUnsafeBufferPointer { leaves in
        model.subsets.withUnsafeBufferPointer { subsets in
        stageThreshold.withUnsafeBufferPointer { stageThreshold in
        stageFirstTree.withUnsafeBufferPointer { stageFirstTree in
        stageTreeCount.withUnsafeBufferPointer { stageTreeCount in
        rowState.withUnsafeMutableBufferPointer { state in
        rowNorm.withUnsafeMutableBufferPointer { norm in
            let ctx = Context(sum: sumBase, squares: squareBase, offsets: offsets.baseAddress!,
                              weights: weights.baseAddress ?? UnsafePointer(bitPattern: 8)!,
                              nodeFeature: nodeFeature.baseAddress!, nodeThreshold: nodeThreshold.baseAddress!,
                              leaves: leaves.baseAddress!, subsets: subsets.baseAddress ?? UnsafePointer(bitPattern: 8)!,
                              subsetSize: model.subsetSize, norm: normOffsets, normArea: normArea,
                              stageThreshold: stageThreshold.baseAddress!, stageFirstTree: stageFirstTree.baseAddress!,
                              stageTreeCount: stageTreeCount.baseAddress!, stageCount: stageThreshold.count)
            var y = 0
            while y < workingHeight {
                let rowOrigin = y * stride
                if vectorStages > 0 {
                    vectorPass(ctx, rowOrigin: rowOrigin, positions: positions, step: step, state: state, norm: norm)
                }
                var x = 0
                while x < workingWidth {
                    let result: Int
                    if vectorStages > 0 {
                        let i = x / step
                        let code = state[i]
                        result = code == Self.survived ? finish(ctx, origin: rowOrigin + x, norm: norm[i], fromStage: vectorStages) : Int(code)
                    } else {
                        result = evaluate(ctx, origin: rowOrigin + x)
                    }
                    if result > 0 {
                        out.append(Detection(x: Int((Float(x) * scale).rounded(.toNearestOrEven)),
                                             y: Int((Float(y) * scale).rounded(.toNearestOrEven)),
                                             width: winW, height: winH))
                    }
                    if result == 0 { x += step }
                    x += step
                }
                y += step
            }
        }}}}}}}}}}}
    }

    /// Raw pointers for one level's scan.
    struct Context {
        let sum: UnsafePointer<Int32>
        let squares: UnsafePointer<UInt32>
        let offsets: UnsafePointer<Int>
        let weights: UnsafePointer<Float>
        let nodeFeature: UnsafePointer<Int>
        let nodeThreshold: UnsafePointer<Float>
        let leaves: UnsafePointer<Float>
        let subsets: UnsafePointer<Int32>
        let subsetSize: Int
        let norm: (Int, Int, Int, Int)
        let normArea: Double
        let stageThreshold: UnsafePointer<Float>
        let stageFirstTree: UnsafePointer<Int>
        let stageTreeCount: UnsafePointer<Int>
        let stageCount: Int
    }

    // MARK: One window at a time

    /// OpenCV's `runAt`: -1 when the window is rejected before any stage (flat Haar window),
    /// 0 or -stage when a stage rejects it, 1 when every stage accepts it.
    @inline(__always)
    private func evaluate(_ c: Context, origin: Int) -> Int {
        var norm: Float = 1
        if model.featureType == .haar {
            guard let factor = normFactor(c, origin: origin) else { return -1 }
            norm = factor
        }
        return finish(c, origin: origin, norm: norm, fromStage: 0)
    }

    /// The variance normalisation factor of the window, or nil when OpenCV's `setWindow` refuses
    /// it (no variance, or so little that area / sqrt(nf) >= 0.1).
    @inline(__always)
    private func normFactor(_ c: Context, origin: Int) -> Float? {
        let s = c.sum + origin, q = c.squares + origin
        let valSum = s[c.norm.0] &- s[c.norm.1] &- s[c.norm.2] &+ s[c.norm.3]
        let valSquares = q[c.norm.0] &- q[c.norm.1] &- q[c.norm.2] &+ q[c.norm.3]
        var nf = c.normArea * Double(valSquares) - Double(valSum) * Double(valSum)
        guard nf > 0 else { return nil }
        nf = nf.squareRoot()
        let factor = Float(1 / nf)
        return c.normArea * Double(factor) < 0.1 ? factor : nil
    }

    @inline(__always)
    private func haarValue(_ c: Context, feature f: Int, at p: UnsafePointer<Int32>) -> Float {
        let o = c.offsets + f * 12, w = c.weights + f * 3
        let r0 = p[o[0]] &- p[o[1]] &- p[o[2]] &+ p[o[3]]
        let r1 = p[o[4]] &- p[o[5]] &- p[o[6]] &+ p[o[7]]
        var value = w[0] * Float(r0) + w[1] * Float(r1)
        if w[2] != 0 {
            let r2 = p[o[8]] &- p[o[9]] &- p[o[10]] &+ p[o[11]]
            value += w[2] * Float(r2)
        }
        return value
    }

    @inline(__always)
    private func lbpCode(_ c: Context, feature f: Int, at p: UnsafePointer<Int32>) -> Int {
        let o = c.offsets + f * 16
        @inline(__always) func block(_ a: Int, _ b: Int, _ d: Int, _ e: Int) -> Int32 {
            p[o[a]] &- p[o[b]] &- p[o[d]] &+ p[o[e]]
        }
        let center = block(5, 6, 9, 10)
        var code = 0
        if block(0, 1, 4, 5) >= center { code |= 128 }
        if block(1, 2, 5, 6) >= center { code |= 64 }
        if block(2, 3, 6, 7) >= center { code |= 32 }
        if block(6, 7, 10, 11) >= center { code |= 16 }
        if block(10, 11, 14, 15) >= center { code |= 8 }
        if block(9, 10, 13, 14) >= center { code |= 4 }
        if block(8, 9, 12, 13) >= center { code |= 2 }
        if block(4, 5, 8, 9) >= center { code |= 1 }
        return code
    }

    /// Stages from `fromStage` on for one window, as OpenCV's predictOrdered(Stump) and
    /// predictCategorical(Stump): features in float, stage sums in double.
    private func finish(_ c: Context, origin: Int, norm: Float, fromStage: Int) -> Int {
        if isStump {
            return model.featureType == .haar ? finishHaarStumps(c, origin: origin, norm: norm, fromStage: fromStage)
                                              : finishLBPStumps(c, origin: origin, fromStage: fromStage)
        }
        return finishTrees(c, origin: origin, norm: norm, fromStage: fromStage)
    }

    private func finishHaarStumps(_ c: Context, origin: Int, norm: Float, fromStage: Int) -> Int {
        let p = c.sum + origin
        var stageIndex = fromStage
        while stageIndex < c.stageCount {
            var total: Double = 0
            let first = c.stageFirstTree[stageIndex]
            for t in first..<(first + c.stageTreeCount[stageIndex]) {
                let value = haarValue(c, feature: c.nodeFeature[t], at: p) * norm
                total += Double(value < c.nodeThreshold[t] ? c.leaves[2 * t] : c.leaves[2 * t + 1])
            }
            if total < Double(c.stageThreshold[stageIndex]) { return -stageIndex }
            stageIndex += 1
        }
        return 1
    }

    private func finishLBPStumps(_ c: Context, origin: Int, fromStage: Int) -> Int {
        let p = c.sum + origin
        var stageIndex = fromStage
        while stageIndex < c.stageCount {
            var total: Double = 0
            let first = c.stageFirstTree[stageIndex]
            for t in first..<(first + c.stageTreeCount[stageIndex]) {
                let code = lbpCode(c, feature: c.nodeFeature[t], at: p)
                let word = c.subsets[t * c.subsetSize + (code >> 5)]
                total += Double(word & (1 << Int32(code & 31)) != 0 ? c.leaves[2 * t] : c.leaves[2 * t + 1])
            }
            if total < Double(c.stageThreshold[stageIndex]) { return -stageIndex }
            stageIndex += 1
        }
        return 1
    }

    private func finishTrees(_ c: Context, origin: Int, norm: Float, fromStage: Int) -> Int {
        let p = c.sum + origin
        let haar = model.featureType == .haar
        var stageIndex = fromStage
        while stageIndex < c.stageCount {
            var total: Double = 0
            let first = c.stageFirstTree[stageIndex]
            for t in first..<(first + c.stageTreeCount[stageIndex]) {
                let tree = model.trees[t]
                var index = 0
                repeat {
                    let node = tree.firstNode + index
                    let goLeft: Bool
                    if haar {
                        goLeft = haarValue(c, feature: c.nodeFeature[node], at: p) * norm < c.nodeThreshold[node]
                    } else {
                        let code = lbpCode(c, feature: c.nodeFeature[node], at: p)
                        goLeft = c.subsets[node * c.subsetSize + (code >> 5)] & (1 << Int32(code & 31)) != 0
                    }
                    index = goLeft ? model.nodes[node].left : model.nodes[node].right
                } while index > 0
                total += Double(c.leaves[tree.firstLeaf - index])
            }
            if total < Double(c.stageThreshold[stageIndex]) { return -stageIndex }
            stageIndex += 1
        }
        return 1
    }

    // MARK: Eight windows at a time

    @inline(__always)
    private static func lanes(_ p: UnsafePointer<Int32>, _ step: Int) -> SIMD8<Int32> {
        if step == 1 {
            return UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Int32>.self)
        }
        return UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Int32>.self).evenHalf
    }

    @inline(__always)
    private static func lanes(_ p: UnsafePointer<UInt32>, _ step: Int) -> SIMD8<UInt32> {
        if step == 1 {
            return UnsafeRawPointer(p).loadUnaligned(as: SIMD8<UInt32>.self)
        }
        return UnsafeRawPointer(p).loadUnaligned(as: SIMD16<UInt32>.self).evenHalf
    }

    /// Runs the first `vectorStages` stages on every window position of a row, eight at a time,
    /// and records per position: -1 (flat window), 0 or -stage (rejected), `survived`, or 1 when
    /// the vector stages are the whole cascade.
    private func vectorPass(_ c: Context, rowOrigin: Int, positions: Int, step: Int,
                            state: UnsafeMutableBufferPointer<Int8>, norm: UnsafeMutableBufferPointer<Float>) {
        let haar = model.featureType == .haar
        let survivedCode: Int8 = vectorStages == model.stages.count ? 1 : Self.survived
        var i = 0
        while i < positions {
            let origin = rowOrigin + i * step
            var normLanes = SIMD8<Float>(repeating: 1)
            var alive: UInt8 = 0xFF
            if haar {
                let s = c.sum + origin, q = c.squares + origin
                let valSum = Self.lanes(s + c.norm.0, step) &- Self.lanes(s + c.norm.1, step)
                    &- Self.lanes(s + c.norm.2, step) &+ Self.lanes(s + c.norm.3, step)
                let valSquares = Self.lanes(q + c.norm.0, step) &- Self.lanes(q + c.norm.1, step)
                    &- Self.lanes(q + c.norm.2, step) &+ Self.lanes(q + c.norm.3, step)
                let sumD = SIMD8<Double>(valSum), squaresD = SIMD8<Double>(valSquares)
                let nf = c.normArea * squaresD - sumD * sumD
                // Lane by lane: the vector squareRoot() becomes eight libm calls on this toolchain.
                var root = nf
                for k in 0..<8 { root[k] = nf[k].squareRoot() }
                let factor = SIMD8<Float>(1 / root)
                let accepted = (nf .> 0) .& (c.normArea * SIMD8<Double>(factor) .< 0.1)
                for k in 0..<8 where !accepted[k] { alive &= ~(1 << UInt8(k)) }
                normLanes = factor
                for k in 0..<8 {
                    state[i + k] = -1
                    norm[i + k] = factor[k]
                }
            }
            var stageIndex = 0
            while stageIndex < vectorStages && alive != 0 {
                let stage = model.stages[stageIndex]
                var total = SIMD8<Double>(repeating: 0)
                for t in stage.firstTree..<(stage.firstTree + stage.treeCount) {
                    let leftLeaf = SIMD8<Float>(repeating: c.leaves[2 * t])
                    let rightLeaf = SIMD8<Float>(repeating: c.leaves[2 * t + 1])
                    let f = c.nodeFeature[t]
                    if haar {
                        let o = c.offsets + f * 12, w = c.weights + f * 3
                        let p = c.sum + origin
                        let r0 = Self.lanes(p + o[0], step) &- Self.lanes(p + o[1], step) &- Self.lanes(p + o[2], step) &+ Self.lanes(p + o[3], step)
                        let r1 = Self.lanes(p + o[4], step) &- Self.lanes(p + o[5], step) &- Self.lanes(p + o[6], step) &+ Self.lanes(p + o[7], step)
                        var value = w[0] * SIMD8<Float>(r0) + w[1] * SIMD8<Float>(r1)
                        if w[2] != 0 {
                            let r2 = Self.lanes(p + o[8], step) &- Self.lanes(p + o[9], step) &- Self.lanes(p + o[10], step) &+ Self.lanes(p + o[11], step)
                            value += w[2] * SIMD8<Float>(r2)
                        }
                        value *= normLanes
                        let leaf = rightLeaf.replacing(with: leftLeaf, where: value .< c.nodeThreshold[t])
                        total += SIMD8<Double>(leaf)
                    } else {
                        let codes = lbpCodes(c, feature: f, origin: origin, step: step)
                        let subset = c.subsets + t * c.subsetSize
                        var leaf = rightLeaf
                        for k in 0..<8 {
                            let code = Int(codes[k])
                            if subset[code >> 5] & (1 << Int32(code & 31)) != 0 { leaf[k] = leftLeaf[k] }
                        }
                        total += SIMD8<Double>(leaf)
                    }
                }
                let rejected = total .< Double(stage.threshold)
                for k in 0..<8 where alive & (1 << UInt8(k)) != 0 && rejected[k] {
                    alive &= ~(1 << UInt8(k))
                    state[i + k] = Int8(-stageIndex)
                }
                stageIndex += 1
            }
            if !haar {
                // LBP windows are always valid: lanes rejected above already hold their stage.
                for k in 0..<8 where alive & (1 << UInt8(k)) != 0 { state[i + k] = survivedCode }
            } else {
                for k in 0..<8 where alive & (1 << UInt8(k)) != 0 { state[i + k] = survivedCode }
            }
            i += 8
        }
    }

    @inline(__always)
    private func lbpCodes(_ c: Context, feature f: Int, origin: Int, step: Int) -> SIMD8<Int32> {
        let o = c.offsets + f * 16
        let p = c.sum + origin
        @inline(__always) func block(_ a: Int, _ b: Int, _ d: Int, _ e: Int) -> SIMD8<Int32> {
            Self.lanes(p + o[a], step) &- Self.lanes(p + o[b], step) &- Self.lanes(p + o[d], step) &+ Self.lanes(p + o[e], step)
        }
        let center = block(5, 6, 9, 10)
        let zero = SIMD8<Int32>(repeating: 0)
        var code = zero
        code |= zero.replacing(with: 128, where: block(0, 1, 4, 5) .>= center)
        code |= zero.replacing(with: 64, where: block(1, 2, 5, 6) .>= center)
        code |= zero.replacing(with: 32, where: block(2, 3, 6, 7) .>= center)
        code |= zero.replacing(with: 16, where: block(6, 7, 10, 11) .>= center)
        code |= zero.replacing(with: 8, where: block(10, 11, 14, 15) .>= center)
        code |= zero.replacing(with: 4, where: block(9, 10, 13, 14) .>= center)
        code |= zero.replacing(with: 2, where: block(8, 9, 12, 13) .>= center)
        code |= zero.replacing(with: 1, where: block(4, 5, 8, 9) .>= center)
        return code
    }
}
