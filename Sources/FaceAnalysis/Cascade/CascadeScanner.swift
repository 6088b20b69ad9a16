import PhotoDecoding

/// Evaluates a cascade over every window of one pyramid level, as OpenCV's
/// `CascadeClassifierInvoker` does, and collects the accepted windows in OpenCV's order.
///
/// Speed comes from these things:
/// - Feature corner offsets are laid out per node in stage order and computed for a level only
///   as far as the deepest stage the level reaches.
/// - For stump cascades the first `vectorStages` stages run row by row, one stage at a time over
///   the whole row: a bitmap holds the windows still alive, and each stage covers them with
///   groups of neighbouring windows that start at a live window (eight or four lanes of Int32
///   for Haar, sixteen or eight lanes of Int16 for LBP), so few lanes carry dead windows.
///   On levels scanned every second column the tables are first split into even and odd columns,
///   so windows two pixels apart are consecutive entries and every load is a plain vector load.
/// - OpenCV never evaluates the window after one its first stage rejects. Once stage 0 has run on
///   a row, those windows are dropped, so later stages run only where OpenCV runs.
/// - LBP block sums of at most 32767 (8-bit pixels, blocks of at most 128 pixels) are exact in
///   16 bits, so LBP codes are computed from a 16-bit copy of the sum table, eight windows per
///   128-bit register. Each stump then looks its leaf up in a 256-entry table and the leaves are
///   added per live window in double, exactly as OpenCV adds them.
/// - Haar stages add leaves in float. Each stage carries a bound on how far that can be from
///   OpenCV's double sum; a window whose float sum lies within the bound of the threshold is
///   re-added in double, so every decision is OpenCV's.
///
/// All buffers belong to the scanner and grow only when an image needs more; the scan loop never
/// allocates. A scanner is used by one `detect` call at a time (`ScannerPool` hands it from one
/// call to the next), which is what makes the unchecked `Sendable` sound.
final class CascadeScanner: @unchecked Sendable {
    let model: CascadeModel
    /// Stages evaluated row-wide in SIMD before survivors are finished one by one.
    let vectorStages: Int
    private let isStump: Bool
    /// Haar trees of exactly two nodes (a root and one child), as haarcascade_frontalface_alt2
    /// has: they run in the vector stages with both nodes evaluated on every lane.
    private let isPairTree: Bool
    private let isHaar: Bool
    /// Haar weights are all (-1, 2), (-1, 3) or (-1, 2, 2): feature values are computed in
    /// Int32 lanes, exactly (see CascadeTables).
    private let integerWeights: Bool
    private let normArea: Double

    // Cascade data in flat buffers (stump cascades: one node per tree, so tree index = node index).
    private let nodeThreshold: Buffer<Float>
    private let leaves: Buffer<Float>
    private let subsets: Buffer<Int32>
    /// Three weights per node's Haar feature (the third 0 for two-rectangle features).
    private let nodeWeights: Buffer<Float>
    private let stageThreshold: Buffer<Float>
    private let stageFirst: Buffer<Int>
    private let stageSize: Buffer<Int>
    /// One past the last node of each stage (nodes are stored in stage order).
    private let stageNodeEnd: Buffer<Int>
    private let treeFirstNode: Buffer<Int>
    private let treeFirstLeaf: Buffer<Int>
    private let nodeLeft: Buffer<Int>
    private let nodeRight: Buffer<Int>
    /// LBP stumps: for each stump the leaf every one of the 256 codes selects (widened to double,
    /// as OpenCV adds it), so a look-up is one load instead of a bit test and a choice.
    private let leafByCode: Buffer<Double>
    /// Float-sum decision limits per stage: below `low` the window surely fails, at or above
    /// `high` it surely passes; in between the stage is re-added in double.
    private let stageLow: Buffer<Float>
    private let stageHigh: Buffer<Float>

    /// Feature corners of each node in window coordinates: 12 per Haar node (3 rects x 4), 16 per
    /// LBP node.
    private let cornerX: [Int]
    private let cornerY: [Int]
    private let cornerTilted: [Bool]
    /// The corners the vector stages read, per tree in vector order: within each stage Haar
    /// trees are grouped by kernel (corner shape, or how many rectangles their nodes have), so
    /// the lane loops need no branch. 12 slots per Haar stump, 24 per pair tree (root, then
    /// child), 16 per LBP stump. Float sums in another order are still within the stage's bound.
    private let vectorCornerX: [Int]
    private let vectorCornerY: [Int]
    private let vectorCornerTilted: [Bool]
    /// Haar stumps are evaluated from their distinct corners with integer coefficients (see
    /// CascadeTables.cornerMode) rather than rectangle by rectangle.
    private let cornerMode: Bool
    /// Per stage, four vector positions: where the trees start whose nodes have (stumps) two,
    /// three rectangles, or (pair trees: root, child) two and two, two and three, three and two,
    /// three and three rectangles; each group ends where the next starts or the stage ends.
    private let stageGroups: Buffer<Int>
    /// Haar trees in vector order as four-lane splats: for a stump the three weights, the
    /// threshold, the left and the right leaf (6); for a pair tree the weights and threshold of
    /// the root and of the child, then the leaves for (root, child) going (right, right),
    /// (right, left), (left, right), (left, left) (12).
    private let stumpSplats: Buffer<SIMD4<Float>>
    private let normCorners: [(x: Int, y: Int)]
    private let cornersPerNode: Int

    // Per level.
    /// Corner offsets per node in node order, in the level's sum table (one window at a time).
    private let linearOffsets: Buffer<Int>
    /// Corner offsets per stump in vector order, in the table the vector stages read.
    private let vectorOffsets: Buffer<Int>
    /// Nodes (positions) whose linear (vector) offsets are computed for the current level.
    private var preparedNodes = 0
    private var preparedVector = 0
    private var levelRows = 0
    private var levelSplit = false
    private var linearNorm = (0, 0, 0, 0)
    private var vectorNorm = (0, 0, 0, 0)
    private var vectorSumNorm = (0, 0, 0, 0)
    private var stride = 0
    private var vectorStride = 0

    var integral = IntegralImage()
    private let tilted: Bool
    private var levelPixels: [UInt8] = []
    private let resizeScratch = Resize.Scratch()
    private var splitSum = Buffer<Int32>(count: 0)
    private var splitSquares = Buffer<UInt32>(count: 0)
    /// LBP: the level's sum table (split when scanned every second column) truncated to 16 bits.
    private var narrowSum = Buffer<Int16>(count: 0)
    /// The current level has only the 16-bit table (see `prepareLevel`).
    private var narrowOnly = false
    /// Stands in for the 32-bit tables in the scan context of a level that has none.
    private let placeholder = Buffer<Int32>(count: 1)
    private let placeholderSquares = Buffer<UInt32>(count: 1)
    private var rowNorm = Buffer<Float>(count: 0)
    /// One bit per window position of the row: still to be evaluated by the next stage.
    private var aliveBits = Buffer<UInt64>(count: 0)
    /// One bit per window position of the row: rejected by stage 0.
    private var firstRejectedBits = Buffer<UInt64>(count: 0)
    /// LBP: the codes of one stage's stumps for sixteen windows.
    private let codeScratch: Buffer<Int16>
    /// LBP: the stage sums of sixteen windows.
    private let laneTotals = Buffer<Double>(count: 16)
    /// Whether every LBP block sum fits in 15 bits, so the 16-bit path is exact.
    private let narrowLBP: Bool


    init(model: CascadeModel, tables: CascadeTables, vectorStages: Int? = nil) {
        self.model = model
        isStump = tables.isStump
        isPairTree = tables.isPairTree
        isHaar = tables.isHaar
        integerWeights = tables.integerWeights
        narrowLBP = tables.narrowLBP
        normArea = tables.normArea
        tilted = tables.tilted
        nodeThreshold = tables.nodeThreshold
        leaves = tables.leaves
        subsets = tables.subsets
        nodeWeights = tables.nodeWeights
        stageThreshold = tables.stageThreshold
        stageFirst = tables.stageFirst
        stageSize = tables.stageSize
        stageNodeEnd = tables.stageNodeEnd
        treeFirstNode = tables.treeFirstNode
        treeFirstLeaf = tables.treeFirstLeaf
        nodeLeft = tables.nodeLeft
        nodeRight = tables.nodeRight
        leafByCode = tables.leafByCode
        stageLow = tables.stageLow
        stageHigh = tables.stageHigh
        cornerX = tables.cornerX
        cornerY = tables.cornerY
        cornerTilted = tables.cornerTilted
        vectorCornerX = tables.vectorCornerX
        vectorCornerY = tables.vectorCornerY
        vectorCornerTilted = tables.vectorCornerTilted
        cornerMode = tables.cornerMode
        stageGroups = tables.stageGroups
        stumpSplats = tables.stumpSplats
        normCorners = tables.normCorners
        cornersPerNode = tables.cornersPerNode
        self.vectorStages = tables.vectorisable ? min(vectorStages ?? model.stages.count, model.stages.count) : 0
        codeScratch = Buffer(count: 16 * tables.maxStageSize)
        linearOffsets = Buffer(count: tables.cornerX.count)
        vectorOffsets = Buffer(count: tables.cornerX.count)
    }

    // MARK: Levels

    /// Resizes `image` (gray) to `levelWidth` x `levelHeight`, builds its tables (split into even
    /// and odd columns when `step` is 2) and resets the feature offsets for the level.
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
        stride = levelWidth + 1
        let rows = levelHeight + 1
        let split = vectorStages > 0 && step == 2
        vectorStride = split ? (stride + 1) / 2 : stride
        // An LBP cascade whose every stage runs in 16-bit lanes never reads the 32-bit table:
        // the 16-bit one is built straight from the pixels.
        narrowOnly = !isHaar && vectorStages > 0 && vectorStages == stageThreshold.count
        levelPixels.withUnsafeBufferPointer { pixels in
            let levelPixels = UnsafeBufferPointer(rebasing: pixels[0..<count])
            if narrowOnly {
                narrowIntegral(levelPixels, width: levelWidth, height: levelHeight, split: split)
            } else {
                integral.compute(levelPixels, width: levelWidth, height: levelHeight, tilted: tilted, squares: isHaar)
            }
        }
        if vectorStages > 0 && !narrowOnly {
            if isHaar {
                if split { splitColumns(rows: rows) }
            } else {
                narrowColumns(rows: rows, split: split)
            }
        }
        timings.resizeNanoseconds += resized - start
        timings.integralNanoseconds += SystemCalls.monotonicNanoseconds() - resized
        levelRows = rows
        levelSplit = split
        preparedNodes = 0
        preparedVector = 0
        computeNormOffsets()
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

    /// LBP: the sum table truncated to 16 bits (wrapping, so block sums below 2^15 stay exact),
    /// split into even and odd columns when `split`.
    private func narrowColumns(rows: Int, split: Bool) {
        let half = vectorStride
        let plane = rows * half
        let pad = IntegralImage.readPadding
        let needed = (split ? 2 * plane : plane) + pad
        if narrowSum.count < needed { narrowSum = Buffer(count: needed) }
        let s = integral.sum.baseAddress!, d = narrowSum.base
        let stride = self.stride
        if !split {
            for i in 0..<(rows * stride) { d[i] = Int16(truncatingIfNeeded: s[i]) }
            return
        }
        for r in 0..<rows {
            let row = s + r * stride
            let even = d + r * half, odd = d + plane + r * half
            for c in 0..<(stride / 2) {
                even[c] = Int16(truncatingIfNeeded: row[2 * c])
                odd[c] = Int16(truncatingIfNeeded: row[2 * c + 1])
            }
            if stride % 2 == 1 { even[stride / 2] = Int16(truncatingIfNeeded: row[stride - 1]) }
        }
    }

    /// The 16-bit sum table of `pixels` (wrapping, as `narrowColumns` truncates the 32-bit one),
    /// split into even and odd columns when `split`.
    private func narrowIntegral(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int, split: Bool) {
        let rows = height + 1, half = vectorStride
        let plane = rows * half
        let needed = (split ? 2 * plane : plane) + IntegralImage.readPadding
        if narrowSum.count < needed { narrowSum = Buffer(count: needed) }
        let d = narrowSum.base, source = pixels.baseAddress!
        for i in 0..<half { d[i] = 0 }
        if split { for i in 0..<half { d[plane + i] = 0 } }
        for y in 0..<height {
            let row = source + y * width
            let here = d + (y + 1) * half
            here[0] = 0
            var run: Int16 = 0
            if split {
                // Table column c lives in plane c & 1 at c >> 1.
                for x in 0..<width {
                    run &+= Int16(row[x])
                    let column = x &+ 1
                    let entry = here + ((column & 1) &* plane &+ (column &>> 1))
                    entry.pointee = run &+ (entry - half).pointee
                }
            } else {
                for x in 0..<width {
                    run &+= Int16(row[x])
                    here[x + 1] = run &+ here[x + 1 - half]
                }
            }
        }
    }

    /// Entries per plane of the split sum table (tilted rows included) and of the square table.
    private var planes: (sum: Int, squares: Int) {
        let sumRows = isHaar && tilted ? 2 * levelRows : levelRows
        return (sumRows * vectorStride, levelRows * vectorStride)
    }

    private func computeNormOffsets() {
        let stride = self.stride, vectorStride = self.vectorStride, split = levelSplit
        let (sumPlane, squarePlane) = planes
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

    /// Makes the linear corner offsets of every node up to the end of stage `s` valid for the
    /// level (levels rarely reach the deep stages, so they are computed only when needed).
    @inline(__always)
    private func prepareOffsets(throughStage s: Int) {
        let end = stageNodeEnd[s]
        if end > preparedNodes { computeLinearOffsets(nodesBelow: end) }
    }

    /// The same for the vector offsets, counted in trees.
    @inline(__always)
    private func prepareVectorOffsets(throughStage s: Int) {
        let end = stageFirst[s] + stageSize[s]
        if end > preparedVector { computeVectorOffsets(positionsBelow: end) }
    }

    private func computeLinearOffsets(nodesBelow end: Int) {
        let tiltedBase = integral.tiltedOffset
        let stride = self.stride
        let from = preparedNodes * cornersPerNode, to = end * cornersPerNode
        cornerX.withUnsafeBufferPointer { xs in
        cornerY.withUnsafeBufferPointer { ys in
        cornerTilted.withUnsafeBufferPointer { tiltedFlags in
            let linear = linearOffsets.base
            for i in from..<to {
                linear[i] = (tiltedFlags[i] ? tiltedBase : 0) + ys[i] * stride + xs[i]
            }
        }}}
        preparedNodes = end
    }

    private func computeVectorOffsets(positionsBelow end: Int) {
        let rows = levelRows, split = levelSplit
        let sumPlane = planes.sum
        let tiltedBase = integral.tiltedOffset
        let stride = self.stride, vectorStride = self.vectorStride
        let slots = cornersPerNode * (isPairTree ? 2 : 1)
        vectorCornerX.withUnsafeBufferPointer { xs in
        vectorCornerY.withUnsafeBufferPointer { ys in
        vectorCornerTilted.withUnsafeBufferPointer { tiltedFlags in
            let vector = vectorOffsets.base
            let from = preparedVector * slots, to = end * slots
            if split {
                for i in from..<to {
                    let x = xs[i], y = ys[i] + (tiltedFlags[i] ? rows : 0)
                    vector[i] = (x & 1) * sumPlane + y * vectorStride + (x >> 1)
                }
            } else {
                for i in from..<to {
                    vector[i] = (tiltedFlags[i] ? tiltedBase : 0) + ys[i] * stride + xs[i]
                }
            }
        }}}
        preparedVector = end
    }

    // MARK: Scanning

    /// Scans the prepared level: windows at (x, y) with x < `workingWidth`, y < `workingHeight`,
    /// stepping by `step` and skipping the next window after one the first stage rejects.
    /// Accepted windows are appended, mapped back to the image by `scale`.
    func scanLevel(workingWidth: Int, workingHeight: Int, step: Int, scale: Float, into out: inout [Detection]) {
        let winW = Int((Float(model.windowWidth) * scale).rounded(.toNearestOrEven))
        let winH = Int((Float(model.windowHeight) * scale).rounded(.toNearestOrEven))
        let positions = (workingWidth + step - 1) / step
        if rowNorm.count < positions + 32 {
            rowNorm = Buffer(count: positions + 32)
            aliveBits = Buffer(count: positions / 64 + 3)
            firstRejectedBits = Buffer(count: positions / 64 + 3)
        }
        let sum = UnsafePointer(narrowOnly ? placeholder.base : integral.sum.baseAddress ?? placeholder.base)
        let squares = UnsafePointer(narrowOnly ? placeholderSquares.base : integral.squares.baseAddress ?? placeholderSquares.base)
        let c = Context(sum: sum, squares: squares,
                        vectorSum: levelSplit ? UnsafePointer(splitSum.base) : sum,
                        vectorSquares: levelSplit ? UnsafePointer(splitSquares.base) : squares,
                        narrowSum: UnsafePointer(narrowSum.base), rowNorm: rowNorm.base,
                        offsets: linearOffsets.base, vectorOffsets: vectorOffsets.base,
                        norm: linearNorm, vectorNorm: vectorNorm, vectorSumNorm: vectorSumNorm)
        let norm = rowNorm.base, alive = aliveBits.base
        let wholeCascade = vectorStages == stageThreshold.count
        var y = 0
        while y < workingHeight {
            let rowOrigin = y * stride
            if vectorStages > 0 {
                // The windows alive after the vector stages are those OpenCV accepts (or has
                // yet to finish); every window OpenCV skips was dropped after stage 0.
                vectorRow(c, rowOrigin: rowOrigin, vectorRow: y * vectorStride, positions: positions, step: step)
                var i = Self.next(alive, from: 0, limit: positions)
                while i < positions {
                    if wholeCascade || finish(c, origin: rowOrigin + i * step, norm: norm[i], fromStage: vectorStages) > 0 {
                        out.append(Detection(x: Int((Float(i * step) * scale).rounded(.toNearestOrEven)),
                                             y: Int((Float(y) * scale).rounded(.toNearestOrEven)),
                                             width: winW, height: winH))
                    }
                    i = Self.next(alive, from: i + 1, limit: positions)
                }
            } else {
                // Window i of the row is at x = i * step.
                var i = 0
                while i < positions {
                    let result = evaluate(c, origin: rowOrigin + i * step)
                    if result > 0 {
                        out.append(Detection(x: Int((Float(i * step) * scale).rounded(.toNearestOrEven)),
                                             y: Int((Float(y) * scale).rounded(.toNearestOrEven)),
                                             width: winW, height: winH))
                    }
                    i += result == 0 ? 2 : 1
                }
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
        let narrowSum: UnsafePointer<Int16>
        /// The row's norm factors, one per window position.
        let rowNorm: UnsafeMutablePointer<Float>
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

    /// A Haar node's weighted rectangle sum, in OpenCV's float arithmetic and order.
    @inline(__always)
    private func haarValue(_ c: Context, node: Int, at p: UnsafePointer<Int32>) -> Float {
        let o = c.offsets + node * 12, w = nodeWeights.base + node * 3
        let r0 = p[o[0]] &- p[o[1]] &- p[o[2]] &+ p[o[3]]
        let r1 = p[o[4]] &- p[o[5]] &- p[o[6]] &+ p[o[7]]
        var value = w[0] * Float(r0) + w[1] * Float(r1)
        if w[2] != 0 {
            let r2 = p[o[8]] &- p[o[9]] &- p[o[10]] &+ p[o[11]]
            value += w[2] * Float(r2)
        }
        return value
    }

    /// An LBP node's 8-bit code: each outer block compared with the centre block.
    @inline(__always)
    private func lbpCode(_ c: Context, node: Int, at p: UnsafePointer<Int32>) -> Int {
        let o = c.offsets + node * 16
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
            if isHaar {
                let left = haarValue(c, node: t, at: p) * norm < nodeThreshold[t]
                total += Double(left ? leaves[2 * t] : leaves[2 * t + 1])
            } else {
                total += leafByCode[t * 256 + lbpCode(c, node: t, at: p)]
            }
        }
        return total
    }

    /// Stages from `fromStage` on for one window, as OpenCV's predictOrderedStump,
    /// predictCategoricalStump, predictOrdered and predictCategorical do them.
    private func finish(_ c: Context, origin: Int, norm: Float, fromStage: Int) -> Int {
        let p = c.sum + origin
        var s = fromStage
        while s < stageThreshold.count {
            prepareOffsets(throughStage: s)
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
                    goLeft = haarValue(c, node: node, at: p) * norm < nodeThreshold[node]
                } else {
                    goLeft = subsetHas(node, lbpCode(c, node: node, at: p))
                }
                index = goLeft ? nodeLeft[node] : nodeRight[node]
            } while index > 0
            total += Double(leaves[treeFirstLeaf[t] - index])
        }
        return total
    }

    // MARK: A row at a time

    /// The bits of `bits` from position `p` on (the low bit is position `p`).
    @inline(__always)
    private static func bits(_ bits: UnsafePointer<UInt64>, from p: Int) -> UInt64 {
        let word = p &>> 6, shift = UInt64(p & 63)
        let low = bits[word] &>> shift
        return shift == 0 ? low : low | bits[word + 1] &<< (64 &- shift)
    }

    /// Clears the bits of `mask` (low bit = position `p`) in `bits`; `mask` has at most 16 bits.
    @inline(__always)
    private static func clear(_ bits: UnsafeMutablePointer<UInt64>, _ mask: UInt64, from p: Int) {
        let word = p &>> 6, shift = UInt64(p & 63)
        bits[word] &= ~(mask &<< shift)
        if shift > 48 { bits[word + 1] &= ~(mask &>> (64 &- shift)) }
    }

    /// The first set position at or after `p`, or `limit` if there is none before it.
    @inline(__always)
    private static func next(_ bits: UnsafePointer<UInt64>, from p: Int, limit: Int) -> Int {
        if p >= limit { return limit }
        var word = p &>> 6
        var value = bits[word] & (~0 &<< UInt64(p & 63))
        let words = (limit + 63) &>> 6
        while value == 0 {
            word += 1
            if word >= words { return limit }
            value = bits[word]
        }
        return min(word &<< 6 + value.trailingZeroBitCount, limit)
    }

    /// The first `vectorStages` stages for every window position of a row, stage by stage.
    /// Leaves set in `aliveBits` exactly the windows OpenCV visits that pass those stages: flat
    /// windows are never set, rejected ones are cleared, and after stage 0 so are the windows
    /// OpenCV skips.
    private func vectorRow(_ c: Context, rowOrigin: Int, vectorRow: Int, positions: Int, step: Int) {
        let alive = aliveBits.base, firstRejected = firstRejectedBits.base
        let words = positions / 64 + 3
        for w in 0..<words { alive[w] = 0; firstRejected[w] = 0 }
        if isHaar {
            haarNorms(c, vectorRow: vectorRow, positions: positions)
        } else {
            for w in 0..<(positions / 64) { alive[w] = ~0 }
            if positions % 64 != 0 { alive[positions / 64] = (1 &<< UInt64(positions % 64)) &- 1 }
        }
        var stage = 0
        while stage < vectorStages {
            prepareVectorOffsets(throughStage: stage)
            var p = Self.next(alive, from: 0, limit: positions)
            if p == positions { break }
            while p < positions {
                let lanes = Self.bits(alive, from: p)
                let rejected: UInt64, width: Int
                if isHaar {
                    (rejected, width) = haarStage(c, stage: stage, at: p, lanes: UInt8(truncatingIfNeeded: lanes),
                                                  vectorRow: vectorRow, rowOrigin: rowOrigin, step: step)
                } else {
                    (rejected, width) = lbpStage(c, stage: stage, at: p, lanes: UInt16(truncatingIfNeeded: lanes),
                                                 vectorRow: vectorRow)
                }
                if rejected != 0 {
                    Self.clear(alive, rejected, from: p)
                    if stage == 0 {
                        let word = p &>> 6, shift = UInt64(p & 63)
                        firstRejected[word] |= rejected &<< shift
                        if shift > 48 { firstRejected[word + 1] |= rejected &>> (64 &- shift) }
                    }
                }
                p = Self.next(alive, from: p + width, limit: positions)
            }
            if stage == 0 { dropSkipped(rejected: firstRejected, alive: alive, positions: positions) }
            stage += 1
        }
    }

    /// For each byte of stage-0 rejections and whether its first window is skipped: the windows
    /// of the byte OpenCV skips (low 8 bits) and whether the next byte's first one is (bit 8).
    private let skipTable: Buffer<UInt16> = {
        var table: [UInt16] = []
        for entry in 0..<512 {
            let rejected = entry & 0xFF
            var skip = entry >> 8, skipped = 0
            for k in 0..<8 {
                skipped |= skip << k
                skip = (rejected >> k) & 1 & ~skip
            }
            table.append(UInt16(skipped | skip << 8))
        }
        return Buffer(table)
    }()

    /// OpenCV skips the window after one stage 0 rejects, unless that one was itself skipped:
    /// walks the row a byte at a time through `skipTable` and drops the skipped windows.
    private func dropSkipped(rejected: UnsafeMutablePointer<UInt64>, alive: UnsafeMutablePointer<UInt64>, positions: Int) {
        let table = skipTable.base
        var carry = 0
        for w in 0...(positions &>> 6) {
            let word = rejected[w]
            var skipped: UInt64 = 0
            for b in 0..<8 {
                let entry = Int(table[carry << 8 | Int((word &>> UInt64(8 * b)) & 0xFF)])
                skipped |= UInt64(entry & 0xFF) &<< UInt64(8 * b)
                carry = entry >> 8
            }
            alive[w] &= ~skipped
        }
    }

    // MARK: Haar lanes

    @inline(__always)
    private static func load4(_ p: UnsafePointer<Int32>) -> SIMD4<Int32> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Int32>.self)
    }

    @inline(__always)
    private static func load8(_ p: UnsafePointer<Int32>) -> SIMD8<Int32> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Int32>.self)
    }

    @inline(__always)
    private static func load8(_ p: UnsafePointer<UInt32>) -> SIMD8<UInt32> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<UInt32>.self)
    }

    /// Lane k's bit in the masks built from comparisons.
    private static let laneBits8 = SIMD8<Int32>(1, 2, 4, 8, 16, 32, 64, 128)
    private static let laneBits4 = SIMD4<Int32>(1, 2, 4, 8)

    /// The variance normalisation factors of every window position of a row, eight at a time:
    /// windows that are not flat are set alive.
    private func haarNorms(_ c: Context, vectorRow: Int, positions: Int) {
        let normOut = rowNorm.base, alive = aliveBits.base
        let area = SIMD8<Double>(repeating: normArea)
        var i = 0
        while i < positions {
            let base = vectorRow + i
            let s = c.vectorSum + base, q = c.vectorSquares + base
            let valSum = Self.load8(s + c.vectorSumNorm.0) &- Self.load8(s + c.vectorSumNorm.1)
                &- Self.load8(s + c.vectorSumNorm.2) &+ Self.load8(s + c.vectorSumNorm.3)
            let valSquares = Self.load8(q + c.vectorNorm.0) &- Self.load8(q + c.vectorNorm.1)
                &- Self.load8(q + c.vectorNorm.2) &+ Self.load8(q + c.vectorNorm.3)
            let sumD = SIMD8<Double>(valSum)
            let nf = area * SIMD8<Double>(valSquares) - sumD * sumD
            // Lane by lane: the vector squareRoot() becomes eight libm calls on this toolchain.
            var root = nf
            for k in 0..<8 { root[k] = nf[k].squareRoot() }
            let factor = SIMD8<Float>(1 / root)
            let accepted = (nf .> 0) .& (area * SIMD8<Double>(factor) .< 0.1)
            let bits = SIMD8<Int64>(1, 2, 4, 8, 16, 32, 64, 128)
            var mask = UInt64(bitPattern: SIMD8<Int64>(repeating: 0).replacing(with: bits, where: accepted).wrappedSum())
            UnsafeMutableRawPointer(normOut + i).storeBytes(of: factor, as: SIMD8<Float>.self)
            if i + 8 > positions { mask &= (1 &<< UInt64(positions - i)) &- 1 }
            alive[i &>> 6] |= mask &<< UInt64(i & 63)
            i += 8
        }
    }

    /// One Haar stump on four windows from its distinct corners (slots ordered by coefficient):
    /// `kind` 0 is an edge (+1 +1 -1 -1 +2 -2), 1 a line (+1 +1 -1 -1 +3 +3 -3 -3), 2 a
    /// checkerboard (+1 x4, -2 x4, +4, negated when the sign splat `d[2]` is all ones).
    @inline(__always)
    private static func haarCorners4(_ s: UnsafePointer<Int32>, _ o: UnsafePointer<Int>, _ d: UnsafePointer<SIMD4<Float>>,
                                     kind: Int, factor: SIMD4<Float>) -> SIMD4<Float> {
        @inline(__always) func c(_ k: Int) -> SIMD4<Int32> { load4(s + o[k]) }
        let ones = c(0) &+ c(1)
        let sum: SIMD4<Int32>
        switch kind {
        case 0:
            sum = ones &- c(2) &- c(3) &+ ((c(4) &- c(5)) &<< 1)
        case 1:
            let threes = c(4) &+ c(5) &- c(6) &- c(7)
            sum = ones &- c(2) &- c(3) &+ (threes &<< 1) &+ threes
        default:
            let sign = unsafeBitCast(d[2], to: SIMD4<Int32>.self)
            let w = ones &+ c(2) &+ c(3) &- ((c(4) &+ c(5) &+ c(6) &+ c(7)) &<< 1) &+ (c(8) &<< 2)
            sum = (w ^ sign) &- sign
        }
        let value = SIMD4<Float>(sum) * factor
        return d[5].replacing(with: d[4], where: value .< d[3])
    }

    /// One Haar stump on four windows: the leaf each selects. `d` is the stump's six splats.
    @inline(__always)
    private static func haarStump4(_ s: UnsafePointer<Int32>, _ o: UnsafePointer<Int>, _ d: UnsafePointer<SIMD4<Float>>,
                                   three: Bool, integer: Bool, factor: SIMD4<Float>) -> SIMD4<Float> {
        let value = haarNode4(s, o, d, three: three, integer: integer, factor: factor)
        return d[5].replacing(with: d[4], where: value .< d[3])
    }

    /// One Haar node's value on four windows, normalised: `d` is its three weight splats.
    /// With `integer`, the weights are (-1, 2), (-1, 3) or (-1, 2, 2) and the weighted sum is
    /// formed exactly in Int32 (shifts and adds), then converted once.
    @inline(__always)
    private static func haarNode4(_ s: UnsafePointer<Int32>, _ o: UnsafePointer<Int>, _ d: UnsafePointer<SIMD4<Float>>,
                                  three: Bool, integer: Bool, factor: SIMD4<Float>) -> SIMD4<Float> {
        let r0 = load4(s + o[0]) &- load4(s + o[1]) &- load4(s + o[2]) &+ load4(s + o[3])
        let r1 = load4(s + o[4]) &- load4(s + o[5]) &- load4(s + o[6]) &+ load4(s + o[7])
        if integer {
            let sum: SIMD4<Int32>
            if three {
                let r2 = load4(s + o[8]) &- load4(s + o[9]) &- load4(s + o[10]) &+ load4(s + o[11])
                sum = (r1 &+ r2) &<< 1 &- r0
            } else {
                let thrice = unsafeBitCast(d[2], to: SIMD4<Int32>.self)
                sum = (r1 &<< 1) &+ (r1 & thrice) &- r0
            }
            return SIMD4<Float>(sum) * factor
        }
        var value = d[0] * SIMD4<Float>(r0) + d[1] * SIMD4<Float>(r1)
        if three {
            let r2 = load4(s + o[8]) &- load4(s + o[9]) &- load4(s + o[10]) &+ load4(s + o[11])
            value += d[2] * SIMD4<Float>(r2)
        }
        return value * factor
    }

    /// One two-node Haar tree on four windows: both nodes are evaluated on every lane and the
    /// leaf each lane reaches is chosen from the four outcomes. `d` is the tree's twelve splats.
    @inline(__always)
    private static func haarPair4(_ s: UnsafePointer<Int32>, _ o: UnsafePointer<Int>, _ d: UnsafePointer<SIMD4<Float>>,
                                  _ three0: Bool, _ three1: Bool, integer: Bool, factor: SIMD4<Float>) -> SIMD4<Float> {
        let rootLeft = haarNode4(s, o, d, three: three0, integer: integer, factor: factor) .< d[3]
        let childLeft = haarNode4(s, o + 12, d + 4, three: three1, integer: integer, factor: factor) .< d[7]
        let ifRootRight = d[8].replacing(with: d[9], where: childLeft)
        let ifRootLeft = d[10].replacing(with: d[11], where: childLeft)
        return ifRootRight.replacing(with: ifRootLeft, where: rootLeft)
    }

    /// One Haar stage on the windows from position `p`: eight lanes when a live window lies in
    /// the upper four of `lanes`, else four. Returns the rejected lanes among `lanes` and the
    /// lanes covered.
    @inline(__always)
    private func haarStage(_ c: Context, stage: Int, at p: Int, lanes: UInt8,
                           vectorRow: Int, rowOrigin: Int, step: Int) -> (UInt64, Int) {
        let s = c.vectorSum + vectorRow + p
        let factors = c.rowNorm + p
        let g = stageGroups.base + 4 &* stage
        let first = stageFirst[stage], middle = g[1], end = first + stageSize[stage]
        let offsets = c.vectorOffsets, splats = stumpSplats.base
        let low = stageLow[stage], high = stageHigh[stage]
        let integer = integerWeights
        let zero = SIMD4<Int32>(repeating: 0)
        var below: UInt8, sure: UInt8, width: Int
        if lanes & 0xF0 == 0 {
            let factor = UnsafeRawPointer(factors).loadUnaligned(as: SIMD4<Float>.self)
            var total = SIMD4<Float>(repeating: 0)
            if cornerMode {
                for j in first..<g[1] {
                    total += Self.haarCorners4(s, offsets + 12 &* j, splats + 6 &* j, kind: 0, factor: factor)
                }
                for j in g[1]..<g[2] {
                    total += Self.haarCorners4(s, offsets + 12 &* j, splats + 6 &* j, kind: 1, factor: factor)
                }
                for j in g[2]..<end {
                    total += Self.haarCorners4(s, offsets + 12 &* j, splats + 6 &* j, kind: 2, factor: factor)
                }
            } else if isStump {
                for j in first..<middle {
                    total += Self.haarStump4(s, offsets + 12 &* j, splats + 6 &* j, three: false, integer: integer, factor: factor)
                }
                for j in middle..<end {
                    total += Self.haarStump4(s, offsets + 12 &* j, splats + 6 &* j, three: true, integer: integer, factor: factor)
                }
            } else {
                for j in first..<g[1] {
                    total += Self.haarPair4(s, offsets + 24 &* j, splats + 12 &* j, false, false, integer: integer, factor: factor)
                }
                for j in g[1]..<g[2] {
                    total += Self.haarPair4(s, offsets + 24 &* j, splats + 12 &* j, false, true, integer: integer, factor: factor)
                }
                for j in g[2]..<g[3] {
                    total += Self.haarPair4(s, offsets + 24 &* j, splats + 12 &* j, true, false, integer: integer, factor: factor)
                }
                for j in g[3]..<end {
                    total += Self.haarPair4(s, offsets + 24 &* j, splats + 12 &* j, true, true, integer: integer, factor: factor)
                }
            }
            below = UInt8(truncatingIfNeeded: zero.replacing(with: Self.laneBits4, where: total .< low).wrappedSum())
            sure = UInt8(truncatingIfNeeded: zero.replacing(with: Self.laneBits4, where: total .>= high).wrappedSum())
            width = 4
        } else {
            let factor0 = UnsafeRawPointer(factors).loadUnaligned(as: SIMD4<Float>.self)
            let factor1 = UnsafeRawPointer(factors + 4).loadUnaligned(as: SIMD4<Float>.self)
            var total0 = SIMD4<Float>(repeating: 0), total1 = SIMD4<Float>(repeating: 0)
            if cornerMode {
                for j in first..<g[1] {
                    let o = offsets + 12 &* j, d = splats + 6 &* j
                    total0 += Self.haarCorners4(s, o, d, kind: 0, factor: factor0)
                    total1 += Self.haarCorners4(s + 4, o, d, kind: 0, factor: factor1)
                }
                for j in g[1]..<g[2] {
                    let o = offsets + 12 &* j, d = splats + 6 &* j
                    total0 += Self.haarCorners4(s, o, d, kind: 1, factor: factor0)
                    total1 += Self.haarCorners4(s + 4, o, d, kind: 1, factor: factor1)
                }
                for j in g[2]..<end {
                    let o = offsets + 12 &* j, d = splats + 6 &* j
                    total0 += Self.haarCorners4(s, o, d, kind: 2, factor: factor0)
                    total1 += Self.haarCorners4(s + 4, o, d, kind: 2, factor: factor1)
                }
            } else if isStump {
                for j in first..<middle {
                    let o = offsets + 12 &* j, d = splats + 6 &* j
                    total0 += Self.haarStump4(s, o, d, three: false, integer: integer, factor: factor0)
                    total1 += Self.haarStump4(s + 4, o, d, three: false, integer: integer, factor: factor1)
                }
                for j in middle..<end {
                    let o = offsets + 12 &* j, d = splats + 6 &* j
                    total0 += Self.haarStump4(s, o, d, three: true, integer: integer, factor: factor0)
                    total1 += Self.haarStump4(s + 4, o, d, three: true, integer: integer, factor: factor1)
                }
            } else {
                for j in first..<g[1] {
                    let o = offsets + 24 &* j, d = splats + 12 &* j
                    total0 += Self.haarPair4(s, o, d, false, false, integer: integer, factor: factor0)
                    total1 += Self.haarPair4(s + 4, o, d, false, false, integer: integer, factor: factor1)
                }
                for j in g[1]..<g[2] {
                    let o = offsets + 24 &* j, d = splats + 12 &* j
                    total0 += Self.haarPair4(s, o, d, false, true, integer: integer, factor: factor0)
                    total1 += Self.haarPair4(s + 4, o, d, false, true, integer: integer, factor: factor1)
                }
                for j in g[2]..<g[3] {
                    let o = offsets + 24 &* j, d = splats + 12 &* j
                    total0 += Self.haarPair4(s, o, d, true, false, integer: integer, factor: factor0)
                    total1 += Self.haarPair4(s + 4, o, d, true, false, integer: integer, factor: factor1)
                }
                for j in g[3]..<end {
                    let o = offsets + 24 &* j, d = splats + 12 &* j
                    total0 += Self.haarPair4(s, o, d, true, true, integer: integer, factor: factor0)
                    total1 += Self.haarPair4(s + 4, o, d, true, true, integer: integer, factor: factor1)
                }
            }
            let below0 = zero.replacing(with: Self.laneBits4, where: total0 .< low).wrappedSum()
            let below1 = zero.replacing(with: Self.laneBits4, where: total1 .< low).wrappedSum()
            let sure0 = zero.replacing(with: Self.laneBits4, where: total0 .>= high).wrappedSum()
            let sure1 = zero.replacing(with: Self.laneBits4, where: total1 .>= high).wrappedSum()
            below = UInt8(truncatingIfNeeded: below0 | below1 &<< 4)
            sure = UInt8(truncatingIfNeeded: sure0 | sure1 &<< 4)
            width = 8
        }
        var rejected = below & lanes
        let uncertain = lanes & ~below & ~sure
        if uncertain != 0 {
            rejected |= settleUncertain(c, stage: stage, lanes: uncertain, at: p, rowOrigin: rowOrigin, step: step)
        }
        return (UInt64(rejected), width)
    }

    /// The lanes among `lanes` (from position `p`) whose exact double stage sum is below the
    /// threshold.
    private func settleUncertain(_ c: Context, stage s: Int, lanes: UInt8, at p: Int, rowOrigin: Int, step: Int) -> UInt8 {
        prepareOffsets(throughStage: s)
        var rejected: UInt8 = 0
        var remaining = lanes
        while remaining != 0 {
            let k = remaining.trailingZeroBitCount
            remaining &= remaining - 1
            let window = c.sum + rowOrigin + (p + k) * step
            let total = isStump ? stumpStageSum(c, stage: s, at: window, norm: c.rowNorm[p + k])
                : treeStageSum(c, stage: s, at: window, norm: c.rowNorm[p + k])
            if total < Double(stageThreshold[s]) {
                rejected |= 1 << UInt8(k)
            }
        }
        return rejected
    }

    // MARK: LBP lanes

    /// The LBP codes of one node for the eight windows from `s`, on the 16-bit table.
    @inline(__always)
    private static func lbpCodes8(_ s: UnsafePointer<Int16>, _ o: UnsafePointer<Int>) -> SIMD8<Int16> {
        let c0 = narrow8(s + o[0]), c1 = narrow8(s + o[1]), c2 = narrow8(s + o[2]), c3 = narrow8(s + o[3])
        let c4 = narrow8(s + o[4]), c5 = narrow8(s + o[5]), c6 = narrow8(s + o[6]), c7 = narrow8(s + o[7])
        let c8 = narrow8(s + o[8]), c9 = narrow8(s + o[9]), c10 = narrow8(s + o[10]), c11 = narrow8(s + o[11])
        let c12 = narrow8(s + o[12]), c13 = narrow8(s + o[13]), c14 = narrow8(s + o[14]), c15 = narrow8(s + o[15])
        let center = c5 &- c6 &- c9 &+ c10
        let zero = SIMD8<Int16>(repeating: 0)
        var code = zero.replacing(with: 128, where: c0 &- c1 &- c4 &+ c5 .>= center)
        code |= zero.replacing(with: 64, where: c1 &- c2 &- c5 &+ c6 .>= center)
        code |= zero.replacing(with: 32, where: c2 &- c3 &- c6 &+ c7 .>= center)
        code |= zero.replacing(with: 16, where: c6 &- c7 &- c10 &+ c11 .>= center)
        code |= zero.replacing(with: 8, where: c10 &- c11 &- c14 &+ c15 .>= center)
        code |= zero.replacing(with: 4, where: c9 &- c10 &- c13 &+ c14 .>= center)
        code |= zero.replacing(with: 2, where: c8 &- c9 &- c12 &+ c13 .>= center)
        code |= zero.replacing(with: 1, where: c4 &- c5 &- c8 &+ c9 .>= center)
        return code
    }

    /// `lbpCodes8` for sixteen windows: each corner offset is read once for both halves.
    @inline(__always)
    private static func lbpCodes16(_ s: UnsafePointer<Int16>, _ o: UnsafePointer<Int>) -> SIMD16<Int16> {
        let c0 = narrow16(s + o[0]), c1 = narrow16(s + o[1]), c2 = narrow16(s + o[2]), c3 = narrow16(s + o[3])
        let c4 = narrow16(s + o[4]), c5 = narrow16(s + o[5]), c6 = narrow16(s + o[6]), c7 = narrow16(s + o[7])
        let c8 = narrow16(s + o[8]), c9 = narrow16(s + o[9]), c10 = narrow16(s + o[10]), c11 = narrow16(s + o[11])
        let c12 = narrow16(s + o[12]), c13 = narrow16(s + o[13]), c14 = narrow16(s + o[14]), c15 = narrow16(s + o[15])
        let center = c5 &- c6 &- c9 &+ c10
        let zero = SIMD16<Int16>(repeating: 0)
        var code = zero.replacing(with: 128, where: c0 &- c1 &- c4 &+ c5 .>= center)
        code |= zero.replacing(with: 64, where: c1 &- c2 &- c5 &+ c6 .>= center)
        code |= zero.replacing(with: 32, where: c2 &- c3 &- c6 &+ c7 .>= center)
        code |= zero.replacing(with: 16, where: c6 &- c7 &- c10 &+ c11 .>= center)
        code |= zero.replacing(with: 8, where: c10 &- c11 &- c14 &+ c15 .>= center)
        code |= zero.replacing(with: 4, where: c9 &- c10 &- c13 &+ c14 .>= center)
        code |= zero.replacing(with: 2, where: c8 &- c9 &- c12 &+ c13 .>= center)
        code |= zero.replacing(with: 1, where: c4 &- c5 &- c8 &+ c9 .>= center)
        return code
    }

    @inline(__always)
    private static func narrow8(_ p: UnsafePointer<Int16>) -> SIMD8<Int16> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Int16>.self)
    }

    @inline(__always)
    private static func narrow16(_ p: UnsafePointer<Int16>) -> SIMD16<Int16> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Int16>.self)
    }

    /// One LBP stage on the windows from position `p`: sixteen lanes when a live window lies in
    /// the upper eight of `lanes`, else eight. Codes are computed in SIMD, leaves looked up and
    /// added in double per live window. Returns the rejected lanes among `lanes` and the lanes
    /// covered.
    @inline(__always)
    private func lbpStage(_ c: Context, stage: Int, at p: Int, lanes: UInt16, vectorRow: Int) -> (UInt64, Int) {
        let s = c.narrowSum + vectorRow + p
        let first = stageFirst[stage], count = stageSize[stage]
        let codes = codeScratch.base
        let wide = lanes & 0xFF00 != 0
        for j in 0..<count {
            let o = c.vectorOffsets + 16 * (first + j)
            let out = UnsafeMutableRawPointer(codes + 16 * j)
            if wide {
                out.storeBytes(of: Self.lbpCodes16(s, o), as: SIMD16<Int16>.self)
            } else {
                out.storeBytes(of: Self.lbpCodes8(s, o), as: SIMD8<Int16>.self)
            }
        }
        let table = leafByCode.base + 256 &* first
        let totals = laneTotals.base
        let width = wide ? 16 : 8
        // Each lane's leaves in stump order, in double, as OpenCV adds them. Dense groups run
        // every lane (dead lanes hold valid codes too) so the loop needs no bit scan.
        @inline(__always) func add(lane k: Int) {
            var total: Double = 0
            var leaf = table, code = codes + k
            for _ in 0..<count {
                total += leaf[Int(code.pointee)]
                leaf += 256
                code += 16
            }
            totals[k] = total
        }
        if lanes.nonzeroBitCount * 2 > width {
            for k in 0..<width { add(lane: k) }
        } else {
            var remaining = lanes
            while remaining != 0 {
                add(lane: remaining.trailingZeroBitCount)
                remaining &= remaining &- 1
            }
        }
        // The decisions two lanes at a time, without a branch per lane (at stage 0 about half
        // the windows fail, unpredictably).
        let threshold = SIMD2<Double>(repeating: Double(stageThreshold[stage]))
        let bits = SIMD2<Int64>(1, 2), none = SIMD2<Int64>(repeating: 0)
        var below: Int64 = 0
        for h in 0..<(width / 2) {
            let pair = UnsafeRawPointer(totals + 2 * h).loadUnaligned(as: SIMD2<Double>.self)
            below |= none.replacing(with: bits, where: pair .< threshold).wrappedSum() &<< Int64(2 * h)
        }
        return (UInt64(bitPattern: below) & UInt64(lanes), width)
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
