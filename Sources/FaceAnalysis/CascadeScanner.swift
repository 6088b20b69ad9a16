import PhotoDecoding

/// Evaluates a cascade over every window of one pyramid level, as OpenCV's
/// `CascadeClassifierInvoker` does, and collects the accepted windows in OpenCV's order.
///
/// Speed comes from three things:
/// - Feature corner offsets are recomputed once per level for that level's table stride.
/// - For stump cascades the first `vectorStages` stages run on eight neighbouring windows per
///   SIMD step; only the few survivors are finished one at a time. On levels scanned every second
///   column the tables are first split into even and odd columns, so eight windows two pixels
///   apart are eight consecutive entries and every load is a plain vector load.
/// - The vector stages add leaves in float. Each stage carries a bound on how far that can be
///   from OpenCV's double sum; a window whose float sum lies within the bound of the threshold is
///   re-added in double, so every decision is OpenCV's.
///
/// All buffers belong to the scanner and are sized once per image; the scan loop never allocates.
final class CascadeScanner {
    let model: CascadeModel
    /// Stages evaluated eight windows at a time before survivors are finished one by one.
    let vectorStages: Int
    private let isStump: Bool
    private let isHaar: Bool
    private let normArea: Double

    // Cascade data in flat buffers (stump cascades: one node per tree, so tree index = node index).
    private let nodeFeature: Buffer<Int>
    private let nodeThreshold: Buffer<Float>
    private let leaves: Buffer<Float>
    private let subsets: Buffer<Int32>
    private let haarWeights: Buffer<Float>          // 3 per Haar feature
    private let stageThreshold: Buffer<Float>
    private let stageFirst: Buffer<Int>
    private let stageSize: Buffer<Int>
    private let treeFirstNode: Buffer<Int>
    private let treeFirstLeaf: Buffer<Int>
    private let nodeLeft: Buffer<Int>
    private let nodeRight: Buffer<Int>
    /// Float-sum decision limits per stage: below `low` the window surely fails, at or above
    /// `high` it surely passes; in between the stage is re-added in double.
    private let stageLow: Buffer<Float>
    private let stageHigh: Buffer<Float>

    /// Feature corners in window coordinates: 12 per Haar feature (3 rects x 4), 16 per LBP feature.
    private let cornerX: [Int]
    private let cornerY: [Int]
    private let cornerTilted: [Bool]
    private let normCorners: [(x: Int, y: Int)]
    private let cornersPerFeature: Int

    // Per level.
    private let linearOffsets: Buffer<Int>
    private let vectorOffsets: Buffer<Int>
    private var linearNorm = (0, 0, 0, 0)
    private var vectorNorm = (0, 0, 0, 0)
    private var stride = 0
    private var vectorStride = 0

    var integral = IntegralImage()
    private let tilted: Bool
    private var levelPixels: [UInt8] = []
    private let resizeScratch = Resize.Scratch()
    private var splitSum = Buffer<Int32>(count: 0)
    private var splitSquares = Buffer<UInt32>(count: 0)
    private var rowState = Buffer<Int8>(count: 0)
    private var rowNorm = Buffer<Float>(count: 0)
    private var rowResume = Buffer<Int>(count: 0)
    /// A group of eight windows leaves the vector stages once fewer lanes than this are alive.
    private let minimumLanes: Int

    /// Codes the vector pass stores per window position.
    private static let survived: Int8 = 2
    private static let flat: Int8 = -1

    init(model: CascadeModel, vectorStages: Int? = nil) {
        self.model = model
        isStump = model.maxNodesPerTree == 1
        isHaar = model.featureType == .haar
        self.vectorStages = isStump ? min(vectorStages ?? model.stages.count, model.stages.count) : 0
        // Measured on 640x480 photos: Haar lanes are cheap enough that a group pays off down to a
        // single live window; LBP lanes end in per-lane look-ups, so few live windows go scalar.
        minimumLanes = model.featureType == .haar ? 1 : 3
        normArea = Double((model.windowWidth - 2) * (model.windowHeight - 2))
        tilted = model.hasTiltedFeatures

        nodeFeature = Buffer(model.nodes.map(\.feature))
        nodeThreshold = Buffer(model.nodes.map(\.threshold))
        leaves = Buffer(model.leaves)
        subsets = Buffer(model.subsets)
        var weights: [Float] = []
        for f in model.haarFeatures {
            for k in 0..<3 { weights.append(k < f.rects.count ? f.rects[k].weight : 0) }
        }
        haarWeights = Buffer(weights)
        stageThreshold = Buffer(model.stages.map(\.threshold))
        stageFirst = Buffer(model.stages.map(\.firstTree))
        stageSize = Buffer(model.stages.map(\.treeCount))
        treeFirstNode = Buffer(model.trees.map(\.firstNode))
        treeFirstLeaf = Buffer(model.trees.map(\.firstLeaf))
        nodeLeft = Buffer(model.nodes.map(\.left))
        nodeRight = Buffer(model.nodes.map(\.right))
        var low: [Float] = [], high: [Float] = []
        for stage in model.stages {
            var magnitude = 0.0
            if model.maxNodesPerTree == 1 {
                for t in stage.firstTree..<(stage.firstTree + stage.treeCount) {
                    magnitude += Double(max(abs(model.leaves[2 * t]), abs(model.leaves[2 * t + 1])))
                }
            }
            // Float and double summation of n terms each stay within n * 2^-24 * sum|terms| of
            // the true sum; twice that, plus a little, separates them.
            let bound = 2 * Double(stage.treeCount + 1) * 0x1p-24 * magnitude + 1e-30
            low.append(Float(Double(stage.threshold) - bound).nextDown)
            high.append(Float(Double(stage.threshold) + bound).nextUp)
        }
        stageLow = Buffer(low)
        stageHigh = Buffer(high)

        var xs: [Int] = [], ys: [Int] = [], tiltedFlags: [Bool] = []
        switch model.featureType {
        case .haar:
            for feature in model.haarFeatures {
                for k in 0..<3 {
                    let corners: [(Int, Int)]
                    if k < feature.rects.count {
                        let r = feature.rects[k]
                        if feature.tilted {
                            corners = [(r.x, r.y), (r.x - r.height, r.y + r.height), (r.x + r.width, r.y + r.width),
                                       (r.x + r.width - r.height, r.y + r.width + r.height)]
                        } else {
                            corners = [(r.x, r.y), (r.x + r.width, r.y), (r.x, r.y + r.height), (r.x + r.width, r.y + r.height)]
                        }
                    } else {
                        corners = [(0, 0), (0, 0), (0, 0), (0, 0)]
                    }
                    for (x, y) in corners {
                        xs.append(x); ys.append(y); tiltedFlags.append(feature.tilted && k < feature.rects.count)
                    }
                }
            }
        case .lbp:
            for feature in model.lbpFeatures {
                for gy in 0..<4 {
                    for gx in 0..<4 {
                        xs.append(feature.x + gx * feature.width)
                        ys.append(feature.y + gy * feature.height)
                        tiltedFlags.append(false)
                    }
                }
            }
        }
        cornerX = xs
        cornerY = ys
        cornerTilted = tiltedFlags
        cornersPerFeature = isHaar ? 12 : 16
        let w = model.windowWidth, h = model.windowHeight
        normCorners = [(1, 1), (w - 1, 1), (1, h - 1), (w - 1, h - 1)]
        linearOffsets = Buffer(count: xs.count)
        vectorOffsets = Buffer(count: xs.count)
    }

    // MARK: Levels

    /// Resizes `image` (gray) to `levelWidth` x `levelHeight`, builds its tables (split into even
    /// and odd columns when `step` is 2) and recomputes the feature offsets for the level.
    func prepareLevel(_ image: Image, levelWidth: Int, levelHeight: Int, step: Int, timings: inout DetectionTimings) {
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
        stride = levelWidth + 1
        let rows = levelHeight + 1
        if vectorStages > 0 && step == 2 {
            vectorStride = (stride + 1) / 2
            splitColumns(rows: rows)
        } else {
            vectorStride = stride
        }
        timings.resizeNanoseconds += resized - start
        timings.integralNanoseconds += SystemCalls.monotonicNanoseconds() - resized
        computeOffsets(rows: rows, split: vectorStages > 0 && step == 2)
    }

    /// Copies the sum (and tilted) and square tables into even-column and odd-column planes.
    private func splitColumns(rows: Int) {
        let sumRows = tilted ? 2 * rows : rows
        let half = vectorStride
        let sumPlane = sumRows * half, squarePlane = rows * half
        let pad = IntegralImage.readPadding
        if splitSum.count < 2 * sumPlane + pad { splitSum = Buffer(count: 2 * sumPlane + pad) }
        if splitSquares.count < 2 * squarePlane + pad { splitSquares = Buffer(count: 2 * squarePlane + pad) }
        let s = integral.sum.baseAddress!, q = integral.squares.baseAddress!
        let ds = splitSum.base, dq = splitSquares.base
        let stride = self.stride
        for r in 0..<sumRows {
            let row = s + r * stride
            let even = ds + r * half, odd = ds + sumPlane + r * half
            for c in 0..<(stride / 2) {
                even[c] = row[2 * c]
                odd[c] = row[2 * c + 1]
            }
            if stride % 2 == 1 { even[stride / 2] = row[stride - 1] }
        }
        for r in 0..<rows {
            let row = q + r * stride
            let even = dq + r * half, odd = dq + squarePlane + r * half
            for c in 0..<(stride / 2) {
                even[c] = row[2 * c]
                odd[c] = row[2 * c + 1]
            }
            if stride % 2 == 1 { even[stride / 2] = row[stride - 1] }
        }
    }

    private func computeOffsets(rows: Int, split: Bool) {
        let sumPlane = (tilted ? 2 * rows : rows) * vectorStride
        let squarePlane = rows * vectorStride
        let tiltedBase = integral.tiltedOffset
        let stride = self.stride, vectorStride = self.vectorStride
        cornerX.withUnsafeBufferPointer { xs in
        cornerY.withUnsafeBufferPointer { ys in
        cornerTilted.withUnsafeBufferPointer { tiltedFlags in
            let linear = linearOffsets.base, vector = vectorOffsets.base
            for i in 0..<xs.count {
                let x = xs[i], y = ys[i], t = tiltedFlags[i]
                linear[i] = (t ? tiltedBase : 0) + y * stride + x
                vector[i] = split ? (x & 1) * sumPlane + (y + (t ? rows : 0)) * vectorStride + (x >> 1) : linear[i]
            }
        }}}
        func linear(_ p: (x: Int, y: Int)) -> Int { p.y * stride + p.x }
        func vector(_ p: (x: Int, y: Int), plane: Int) -> Int {
            split ? (p.x & 1) * plane + p.y * vectorStride + (p.x >> 1) : linear(p)
        }
        let n = normCorners
        linearNorm = (linear(n[0]), linear(n[1]), linear(n[2]), linear(n[3]))
        // Sum and square planes differ in size, so the norm corners have an offset for each.
        vectorNorm = (vector(n[0], plane: squarePlane), vector(n[1], plane: squarePlane),
                      vector(n[2], plane: squarePlane), vector(n[3], plane: squarePlane))
        vectorSumNorm = (vector(n[0], plane: sumPlane), vector(n[1], plane: sumPlane),
                         vector(n[2], plane: sumPlane), vector(n[3], plane: sumPlane))
    }
    private var vectorSumNorm = (0, 0, 0, 0)

    // MARK: Scanning

    /// Scans the prepared level: windows at (x, y) with x < `workingWidth`, y < `workingHeight`,
    /// stepping by `step` and skipping the next window after one the first stage rejects.
    /// Accepted windows are appended, mapped back to the image by `scale`.
    func scanLevel(workingWidth: Int, workingHeight: Int, step: Int, scale: Float, into out: inout [Detection]) {
        let winW = Int((Float(model.windowWidth) * scale).rounded(.toNearestOrEven))
        let winH = Int((Float(model.windowHeight) * scale).rounded(.toNearestOrEven))
        let positions = (workingWidth + step - 1) / step
        if rowState.count < positions + 16 {
            rowState = Buffer(count: positions + 16)
            rowNorm = Buffer(count: positions + 16)
            rowResume = Buffer(count: positions + 16)
        }
        let split = vectorStages > 0 && step == 2
        let c = Context(sum: integral.sum.baseAddress!, squares: integral.squares.baseAddress!,
                        vectorSum: UnsafePointer(split ? splitSum.base : integral.sum.baseAddress!),
                        vectorSquares: UnsafePointer(split ? splitSquares.base : integral.squares.baseAddress!),
                        offsets: linearOffsets.base, vectorOffsets: vectorOffsets.base,
                        norm: linearNorm, vectorNorm: vectorNorm, vectorSumNorm: vectorSumNorm)
        let state = rowState.base, norm = rowNorm.base, resume = rowResume.base
        var y = 0
        while y < workingHeight {
            let rowOrigin = y * stride
            if vectorStages > 0 {
                if isHaar {
                    vectorHaar(c, rowOrigin: rowOrigin, vectorRow: y * vectorStride, positions: positions, step: step)
                } else {
                    vectorLBP(c, rowOrigin: rowOrigin, vectorRow: y * vectorStride, positions: positions, step: step)
                }
            }
            var x = 0
            while x < workingWidth {
                let result: Int
                if vectorStages > 0 {
                    let i = x / step
                    let code = state[i]
                    result = code == Self.survived ? finish(c, origin: rowOrigin + x, norm: norm[i], fromStage: resume[i]) : Int(code)
                } else {
                    result = evaluate(c, origin: rowOrigin + x)
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
    }

    /// Raw pointers for one level's scan.
    struct Context {
        let sum: UnsafePointer<Int32>
        let squares: UnsafePointer<UInt32>
        let vectorSum: UnsafePointer<Int32>
        let vectorSquares: UnsafePointer<UInt32>
        let offsets: UnsafePointer<Int>
        let vectorOffsets: UnsafePointer<Int>
        let norm: (Int, Int, Int, Int)
        let vectorNorm: (Int, Int, Int, Int)
        let vectorSumNorm: (Int, Int, Int, Int)
    }

    // MARK: One window at a time

    /// OpenCV's `runAt`: -1 when the window is refused before any stage (a flat Haar window),
    /// 0 or -stage when a stage rejects it, 1 when every stage accepts it.
    private func evaluate(_ c: Context, origin: Int) -> Int {
        var norm: Float = 1
        if isHaar {
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
        var nf = normArea * Double(valSquares) - Double(valSum) * Double(valSum)
        guard nf > 0 else { return nil }
        nf = nf.squareRoot()
        let factor = Float(1 / nf)
        return normArea * Double(factor) < 0.1 ? factor : nil
    }

    /// A Haar feature's weighted rectangle sum, in OpenCV's float arithmetic and order.
    @inline(__always)
    private func haarValue(_ c: Context, feature f: Int, at p: UnsafePointer<Int32>) -> Float {
        let o = c.offsets + f * 12, w = haarWeights.base + f * 3
        let r0 = p[o[0]] &- p[o[1]] &- p[o[2]] &+ p[o[3]]
        let r1 = p[o[4]] &- p[o[5]] &- p[o[6]] &+ p[o[7]]
        var value = w[0] * Float(r0) + w[1] * Float(r1)
        if w[2] != 0 {
            let r2 = p[o[8]] &- p[o[9]] &- p[o[10]] &+ p[o[11]]
            value += w[2] * Float(r2)
        }
        return value
    }

    /// An LBP feature's 8-bit code: each outer block compared with the centre block.
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

    @inline(__always)
    private func subsetHas(_ node: Int, _ code: Int) -> Bool {
        let word = subsets[node * model.subsetSize + (code >> 5)]
        return word & (1 << Int32(code & 31)) != 0
    }

    /// One stump stage's leaf sum for one window, in double as OpenCV adds it.
    @inline(__always)
    private func stumpStageSum(_ c: Context, stage s: Int, at p: UnsafePointer<Int32>, norm: Float) -> Double {
        var total: Double = 0
        let first = stageFirst[s]
        for t in first..<(first + stageSize[s]) {
            let left: Bool
            if isHaar {
                left = haarValue(c, feature: nodeFeature[t], at: p) * norm < nodeThreshold[t]
            } else {
                left = subsetHas(t, lbpCode(c, feature: nodeFeature[t], at: p))
            }
            total += Double(left ? leaves[2 * t] : leaves[2 * t + 1])
        }
        return total
    }

    /// Stages from `fromStage` on for one window, as OpenCV's predictOrderedStump,
    /// predictCategoricalStump, predictOrdered and predictCategorical do them.
    private func finish(_ c: Context, origin: Int, norm: Float, fromStage: Int) -> Int {
        let p = c.sum + origin
        var s = fromStage
        while s < stageThreshold.count {
            let total: Double
            if isStump {
                total = stumpStageSum(c, stage: s, at: p, norm: norm)
            } else {
                total = treeStageSum(c, stage: s, at: p, norm: norm)
            }
            if total < Double(stageThreshold[s]) { return -s }
            s += 1
        }
        return 1
    }

    private func treeStageSum(_ c: Context, stage s: Int, at p: UnsafePointer<Int32>, norm: Float) -> Double {
        var total: Double = 0
        let first = stageFirst[s]
        for t in first..<(first + stageSize[s]) {
            let root = treeFirstNode[t]
            var index = 0
            repeat {
                let node = root + index
                let goLeft: Bool
                if isHaar {
                    goLeft = haarValue(c, feature: nodeFeature[node], at: p) * norm < nodeThreshold[node]
                } else {
                    goLeft = subsetHas(node, lbpCode(c, feature: nodeFeature[node], at: p))
                }
                index = goLeft ? nodeLeft[node] : nodeRight[node]
            } while index > 0
            total += Double(leaves[treeFirstLeaf[t] - index])
        }
        return total
    }

    // MARK: Eight windows at a time

    @inline(__always)
    private static func load(_ p: UnsafePointer<Int32>) -> SIMD8<Int32> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Int32>.self)
    }

    @inline(__always)
    private static func load(_ p: UnsafePointer<UInt32>) -> SIMD8<UInt32> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<UInt32>.self)
    }

    /// Lane k's bit in the masks `settle` builds.
    private static let laneBits = SIMD8<Int32>(1, 2, 4, 8, 16, 32, 64, 128)

    /// Settles the lanes of one vector stage: a lane whose float sum is surely below the
    /// threshold is rejected, one in the uncertain band around it is re-added in double.
    @inline(__always)
    private func settle(_ c: Context, stage s: Int, total: SIMD8<Float>, alive: inout UInt8,
                        index i: Int, rowOrigin: Int, step: Int) {
        let zero = SIMD8<Int32>(repeating: 0)
        var rejected = UInt8(truncatingIfNeeded: zero.replacing(with: Self.laneBits, where: total .< stageLow[s]).wrappedSum()) & alive
        let sure = UInt8(truncatingIfNeeded: zero.replacing(with: Self.laneBits, where: total .>= stageHigh[s]).wrappedSum())
        let uncertain = alive & ~rejected & ~sure
        if uncertain != 0 {
            rejected |= settleUncertain(c, stage: s, lanes: uncertain, index: i, rowOrigin: rowOrigin, step: step)
        }
        guard rejected != 0 else { return }
        alive &= ~rejected
        let state = rowState.base
        let code = Int8(-s)
        while rejected != 0 {
            state[i + rejected.trailingZeroBitCount] = code
            rejected &= rejected - 1
        }
    }

    /// The lanes among `lanes` whose exact double stage sum is below the threshold.
    private func settleUncertain(_ c: Context, stage s: Int, lanes: UInt8, index i: Int, rowOrigin: Int, step: Int) -> UInt8 {
        var rejected: UInt8 = 0
        var remaining = lanes
        while remaining != 0 {
            let k = remaining.trailingZeroBitCount
            remaining &= remaining - 1
            let p = c.sum + rowOrigin + (i + k) * step
            if stumpStageSum(c, stage: s, at: p, norm: rowNorm[i + k]) < Double(stageThreshold[s]) {
                rejected |= 1 << UInt8(k)
            }
        }
        return rejected
    }

    /// The first `vectorStages` stages of a Haar stump cascade for every window position of a
    /// row, eight at a time. Records per position: -1 (flat window), 0 or -stage (rejected), or
    /// `survived` (1 when the vector stages are the whole cascade), and the norm factor.
    private func vectorHaar(_ c: Context, rowOrigin: Int, vectorRow: Int, positions: Int, step: Int) {
        let state = rowState.base, normOut = rowNorm.base, resume = rowResume.base
        let survivedCode: Int8 = 1
        let area = SIMD8<Double>(repeating: normArea)
        var i = 0
        while i < positions {
            let base = vectorRow + i
            let s = c.vectorSum + base, q = c.vectorSquares + base
            let valSum = Self.load(s + c.vectorSumNorm.0) &- Self.load(s + c.vectorSumNorm.1)
                &- Self.load(s + c.vectorSumNorm.2) &+ Self.load(s + c.vectorSumNorm.3)
            let valSquares = Self.load(q + c.vectorNorm.0) &- Self.load(q + c.vectorNorm.1)
                &- Self.load(q + c.vectorNorm.2) &+ Self.load(q + c.vectorNorm.3)
            let sumD = SIMD8<Double>(valSum)
            let nf = area * SIMD8<Double>(valSquares) - sumD * sumD
            // Lane by lane: the vector squareRoot() becomes eight libm calls on this toolchain.
            var root = nf
            for k in 0..<8 { root[k] = nf[k].squareRoot() }
            let factor = SIMD8<Float>(1 / root)
            let accepted = (nf .> 0) .& (area * SIMD8<Double>(factor) .< 0.1)
            var alive: UInt8 = 0
            for k in 0..<8 {
                if accepted[k] { alive |= 1 << UInt8(k) }
                state[i + k] = Self.flat
                normOut[i + k] = factor[k]
            }
            var stage = 0
            while stage < vectorStages && alive.nonzeroBitCount >= minimumLanes {
                var total = SIMD8<Float>(repeating: 0)
                let first = stageFirst[stage]
                for t in first..<(first + stageSize[stage]) {
                    let f = nodeFeature[t]
                    let o = c.vectorOffsets + f * 12, w = haarWeights.base + f * 3
                    let r0 = Self.load(s + o[0]) &- Self.load(s + o[1]) &- Self.load(s + o[2]) &+ Self.load(s + o[3])
                    let r1 = Self.load(s + o[4]) &- Self.load(s + o[5]) &- Self.load(s + o[6]) &+ Self.load(s + o[7])
                    var value = w[0] * SIMD8<Float>(r0) + w[1] * SIMD8<Float>(r1)
                    if w[2] != 0 {
                        let r2 = Self.load(s + o[8]) &- Self.load(s + o[9]) &- Self.load(s + o[10]) &+ Self.load(s + o[11])
                        value += w[2] * SIMD8<Float>(r2)
                    }
                    value *= factor
                    let right = SIMD8<Float>(repeating: leaves[2 * t + 1])
                    total += right.replacing(with: leaves[2 * t], where: value .< nodeThreshold[t])
                }
                settle(c, stage: stage, total: total, alive: &alive, index: i, rowOrigin: rowOrigin, step: step)
                stage += 1
            }
            let code = stage == stageThreshold.count ? survivedCode : Self.survived
            for k in 0..<8 where alive & (1 << UInt8(k)) != 0 {
                state[i + k] = code
                resume[i + k] = stage
            }
            i += 8
        }
    }

    /// The first `vectorStages` stages of an LBP stump cascade for every window position of a
    /// row, eight at a time (codes in SIMD, subset look-ups per lane).
    private func vectorLBP(_ c: Context, rowOrigin: Int, vectorRow: Int, positions: Int, step: Int) {
        let state = rowState.base, resume = rowResume.base
        let survivedCode: Int8 = 1
        let subsetSize = model.subsetSize
        var i = 0
        while i < positions {
            let s = c.vectorSum + vectorRow + i
            var alive: UInt8 = 0xFF
            var stage = 0
            while stage < vectorStages && alive.nonzeroBitCount >= minimumLanes {
                var total = SIMD8<Float>(repeating: 0)
                let first = stageFirst[stage]
                for t in first..<(first + stageSize[stage]) {
                    let o = c.vectorOffsets + nodeFeature[t] * 16
                    @inline(__always) func block(_ a: Int, _ b: Int, _ d: Int, _ e: Int) -> SIMD8<Int32> {
                        Self.load(s + o[a]) &- Self.load(s + o[b]) &- Self.load(s + o[d]) &+ Self.load(s + o[e])
                    }
                    let center = block(5, 6, 9, 10)
                    let zero = SIMD8<Int32>(repeating: 0)
                    var code = zero.replacing(with: 128, where: block(0, 1, 4, 5) .>= center)
                    code |= zero.replacing(with: 64, where: block(1, 2, 5, 6) .>= center)
                    code |= zero.replacing(with: 32, where: block(2, 3, 6, 7) .>= center)
                    code |= zero.replacing(with: 16, where: block(6, 7, 10, 11) .>= center)
                    code |= zero.replacing(with: 8, where: block(10, 11, 14, 15) .>= center)
                    code |= zero.replacing(with: 4, where: block(9, 10, 13, 14) .>= center)
                    code |= zero.replacing(with: 2, where: block(8, 9, 12, 13) .>= center)
                    code |= zero.replacing(with: 1, where: block(4, 5, 8, 9) .>= center)
                    let subset = subsets.base + t * subsetSize
                    let left = leaves[2 * t], right = leaves[2 * t + 1]
                    var leaf = SIMD8<Float>(repeating: right)
                    for k in 0..<8 {
                        let v = Int(code[k])
                        if subset[v >> 5] & (1 << Int32(v & 31)) != 0 { leaf[k] = left }
                    }
                    total += leaf
                }
                settle(c, stage: stage, total: total, alive: &alive, index: i, rowOrigin: rowOrigin, step: step)
                stage += 1
            }
            let code = stage == stageThreshold.count ? survivedCode : Self.survived
            for k in 0..<8 where alive & (1 << UInt8(k)) != 0 {
                state[i + k] = code
                resume[i + k] = stage
            }
            i += 8
        }
    }
}

/// A fixed-size heap buffer owned by the scanner: plain pointer access in the hot loops, freed
/// with its owner.
final class Buffer<Element> {
    let base: UnsafeMutablePointer<Element>
    let count: Int

    /// `count` elements, zero-filled (the element types here are plain numbers and flags).
    init(count: Int) {
        self.count = count
        base = .allocate(capacity: max(count, 1))
        UnsafeMutableRawPointer(base).initializeMemory(as: UInt8.self, repeating: 0,
                                                       count: max(count, 1) * MemoryLayout<Element>.stride)
    }

    /// A copy of `values`.
    init(_ values: [Element]) {
        count = values.count
        base = .allocate(capacity: max(values.count, 1))
        if !values.isEmpty {
            values.withUnsafeBufferPointer { base.initialize(from: $0.baseAddress!, count: values.count) }
        }
    }

    deinit { base.deallocate() }

    @inline(__always)
    subscript(_ i: Int) -> Element {
        get { base[i] }
        set { base[i] = newValue }
    }
}
