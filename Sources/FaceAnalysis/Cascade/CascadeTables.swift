/// What a `CascadeScanner` derives from a cascade before it can scan: flat buffers of the
/// stages, trees, leaves and feature corners, the vector order and splats, and the float-sum
/// bounds. Built once when the cascade is loaded and only read afterwards, so every `detect`
/// call (on any thread) shares it instead of rebuilding it.
final class CascadeTables: @unchecked Sendable {
    // Cascade data in flat buffers (stump cascades: one node per tree, so tree index = node index).
    let isStump: Bool
    /// Haar trees of exactly two nodes (a root and one child), as haarcascade_frontalface_alt2
    /// has: they run in the vector stages with both nodes evaluated on every lane.
    let isPairTree: Bool
    let isHaar: Bool
    /// Haar weights are all (-1, 2), (-1, 3) or (-1, 2, 2): feature values are computed in
    /// Int32 lanes, exactly (`init` checks the weights).
    let integerWeights: Bool
    /// Whether every LBP block sum fits in 15 bits, so the 16-bit path is exact.
    let narrowLBP: Bool
    let vectorisable: Bool
    let normArea: Double
    let tilted: Bool
    let nodeThreshold: Buffer<Float>
    let leaves: Buffer<Float>
    let subsets: Buffer<Int32>
    /// Three weights per node's Haar feature (the third 0 for two-rectangle features).
    let nodeWeights: Buffer<Float>
    let stageThreshold: Buffer<Float>
    let stageFirst: Buffer<Int>
    let stageSize: Buffer<Int>
    /// One past the last node of each stage (nodes are stored in stage order).
    let stageNodeEnd: Buffer<Int>
    let treeFirstNode: Buffer<Int>
    let treeFirstLeaf: Buffer<Int>
    let nodeLeft: Buffer<Int>
    let nodeRight: Buffer<Int>
    /// LBP stumps: for each stump the leaf every one of the 256 codes selects (widened to double,
    /// as OpenCV adds it), so a look-up is one load instead of a bit test and a choice.
    let leafByCode: Buffer<Double>
    /// Float-sum decision limits per stage: below `low` the window surely fails, at or above
    /// `high` it surely passes; in between the stage is re-added in double.
    let stageLow: Buffer<Float>
    let stageHigh: Buffer<Float>
    /// Feature corners of each node in window coordinates: 12 per Haar node (3 rects x 4), 16 per
    /// LBP node.
    let cornerX: [Int]
    let cornerY: [Int]
    let cornerTilted: [Bool]
    /// The corners the vector stages read, per tree in vector order: within each stage Haar
    /// trees are grouped by kernel (corner shape, or how many rectangles their nodes have), so
    /// the lane loops need no branch. 12 slots per Haar stump, 24 per pair tree (root, then
    /// child), 16 per LBP stump. Float sums in another order are still within the stage's bound.
    let vectorCornerX: [Int]
    let vectorCornerY: [Int]
    let vectorCornerTilted: [Bool]
    /// Haar stumps are evaluated from their distinct corners with integer coefficients (see
    /// `init`) rather than rectangle by rectangle.
    let cornerMode: Bool
    /// Per stage, four vector positions: where the trees start whose nodes have (stumps) two,
    /// three rectangles, or (pair trees: root, child) two and two, two and three, three and two,
    /// three and three rectangles; each group ends where the next starts or the stage ends.
    let stageGroups: Buffer<Int>
    /// Haar trees in vector order as four-lane splats: for a stump the three weights, the
    /// threshold, the left and the right leaf (6); for a pair tree the weights and threshold of
    /// the root and of the child, then the leaves for (root, child) going (right, right),
    /// (right, left), (left, right), (left, left) (12).
    let stumpSplats: Buffer<SIMD4<Float>>
    let normCorners: [(x: Int, y: Int)]
    let cornersPerNode: Int
    /// The largest number of trees in a stage.
    let maxStageSize: Int

    init(model: CascadeModel) {
        isStump = model.maxNodesPerTree == 1
        isHaar = model.featureType == .haar
        // An LBP block of w x h 8-bit pixels sums to at most 255 w h; the 16-bit path needs that
        // to stay below 2^15.
        narrowLBP = model.lbpFeatures.allSatisfy { 255 * $0.width * $0.height <= Int(Int16.max) }
        isPairTree = !isStump && isHaar && model.trees.allSatisfy { tree in
            guard tree.nodeCount == 2 else { return false }
            let root = model.nodes[tree.firstNode], child = model.nodes[tree.firstNode + 1]
            return (root.left == 1) != (root.right == 1) && child.left <= 0 && child.right <= 0
        }
        vectorisable = (isStump && (isHaar || narrowLBP)) || isPairTree
        normArea = Double((model.windowWidth - 2) * (model.windowHeight - 2))
        tilted = model.hasTiltedFeatures

        nodeThreshold = Buffer(model.nodes.map(\.threshold))
        leaves = Buffer(model.leaves)
        subsets = Buffer(model.subsets)
        var weights: [Float] = []
        if model.featureType == .haar {
            for node in model.nodes {
                let f = model.haarFeatures[node.feature]
                for k in 0..<3 { weights.append(k < f.rects.count ? f.rects[k].weight : 0) }
            }
        }
        nodeWeights = Buffer(weights)
        stageThreshold = Buffer(model.stages.map(\.threshold))
        stageFirst = Buffer(model.stages.map(\.firstTree))
        stageSize = Buffer(model.stages.map(\.treeCount))
        var ends: [Int] = []
        var end = 0
        for stage in model.stages {
            for t in stage.firstTree..<(stage.firstTree + stage.treeCount) {
                end = max(end, model.trees[t].firstNode + model.trees[t].nodeCount)
            }
            ends.append(end)
        }
        stageNodeEnd = Buffer(ends)
        treeFirstNode = Buffer(model.trees.map(\.firstNode))
        treeFirstLeaf = Buffer(model.trees.map(\.firstLeaf))
        nodeLeft = Buffer(model.nodes.map(\.left))
        nodeRight = Buffer(model.nodes.map(\.right))
        var byCode: [Double] = []
        if model.featureType == .lbp && model.maxNodesPerTree == 1 {
            byCode.reserveCapacity(model.nodes.count * 256)
            for t in model.nodes.indices {
                for code in 0..<256 {
                    let word = model.subsets[t * model.subsetSize + (code >> 5)]
                    byCode.append(Double(word & (1 << Int32(code & 31)) != 0 ? model.leaves[2 * t] : model.leaves[2 * t + 1]))
                }
            }
        }
        leafByCode = Buffer(byCode)
        var low: [Float] = [], high: [Float] = []
        for stage in model.stages {
            var magnitude = 0.0
            for t in stage.firstTree..<(stage.firstTree + stage.treeCount) {
                let tree = model.trees[t]
                magnitude += Double(model.leaves[tree.firstLeaf...(tree.firstLeaf + tree.nodeCount)].map(abs).max() ?? 0)
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
            for node in model.nodes {
                let feature = model.haarFeatures[node.feature]
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
            for node in model.nodes {
                let feature = model.lbpFeatures[node.feature]
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
        // Integer weights: every Haar feature of the cascade weighs its rectangles (-1, 2),
        // (-1, 3) or (-1, 2, 2), and no weighted sum can reach 2^24 (255 per pixel, window area
        // per rectangle, total weight at most 5). Then OpenCV's float products and sums of
        // integer rectangle sums are all exact, and the same integer computed in Int32 lanes
        // converts to the very same float.
        let patterns: [[Float]] = [[-1, 2], [-1, 3], [-1, 2, 2]]
        let integer = model.featureType == .haar
            && 255 * 5 * model.windowWidth * model.windowHeight < 1 << 24
            && model.haarFeatures.allSatisfy { f in patterns.contains(f.rects.map(\.weight)) }
        integerWeights = integer
        func splat(_ v: Float) -> SIMD4<Float> { SIMD4(repeating: v) }
        /// A node's three weight splats; with integer weights the third holds the lane mask
        /// that adds the second rectangle a third time (weights -1, 3).
        func weightSplats(_ n: Int) -> [SIMD4<Float>] {
            let w = weights[(3 * n)..<(3 * n + 3)].map(splat)
            guard integer else { return w }
            let mask = SIMD4<UInt32>(repeating: weights[3 * n + 1] == 3 ? ~0 : 0)
            return [w[0], w[1], unsafeBitCast(mask, to: SIMD4<Float>.self)]
        }
        // Corner layouts (stumps with integer weights): a feature's rectangles merged into its
        // distinct corners, each with an integer coefficient. The frontal-face cascades have
        // four shapes: edges (-1, 2) with six corners, lines (-1, 3) with eight, and the two
        // checkerboards (-1, 2, 2) with nine. Slots are ordered by coefficient so one kernel
        // per shape forms the weighted sum from fewer loads than rectangle by rectangle.
        func cornerLayout(_ node: Int) -> (kind: Int, corners: [(Int, Int)], negative: Bool)? {
            let feature = model.haarFeatures[model.nodes[node].feature]
            guard !feature.tilted else { return nil }
            var coefficient: [Int: Int] = [:]
            for r in feature.rects {
                guard r.x >= 0, r.y >= 0, r.x + r.width < 4096 else { return nil }
                let w = Int(r.weight)
                for (x, y, sign) in [(r.x, r.y, 1), (r.x + r.width, r.y, -1), (r.x, r.y + r.height, -1),
                                     (r.x + r.width, r.y + r.height, 1)] {
                    coefficient[y * 4096 + x, default: 0] += w * sign
                }
            }
            let entries = coefficient.filter { $0.value != 0 }.sorted { $0.key < $1.key }
            func corners(_ c: Int) -> [(Int, Int)] { entries.filter { $0.value == c }.map { ($0.key % 4096, $0.key / 4096) } }
            switch entries.map(\.value).sorted() {
            case [-2, -1, -1, 1, 1, 2]: return (0, corners(1) + corners(-1) + corners(2) + corners(-2), false)
            case [-3, -3, -1, -1, 1, 1, 3, 3]: return (1, corners(1) + corners(-1) + corners(3) + corners(-3), false)
            case [-2, -2, -2, -2, 1, 1, 1, 1, 4]: return (2, corners(1) + corners(-2) + corners(4), false)
            case [-4, -1, -1, -1, -1, 2, 2, 2, 2]: return (2, corners(-1) + corners(2) + corners(-4), true)
            default: return nil
            }
        }
        let layouts = integer && isStump ? model.nodes.indices.map(cornerLayout) : []
        let corners = !layouts.isEmpty && layouts.allSatisfy { $0 != nil }
        cornerMode = corners
        // Vector order: per stage, trees grouped by kernel (corner shape, or which of their
        // nodes have three rectangles).
        var order: [Int] = [], groups: [Int] = [], splats: [SIMD4<Float>] = []
        func three(_ node: Int) -> Bool {
            model.featureType == .haar && model.haarFeatures[model.nodes[node].feature].rects.count > 2
        }
        for stage in model.stages {
            let trees = Array(stage.firstTree..<(stage.firstTree + stage.treeCount))
            let root = { (t: Int) in model.trees[t].firstNode }
            if isPairTree {
                for key in 0..<4 {
                    groups.append(order.count)
                    order += trees.filter { (three(root($0)) ? 2 : 0) + (three(root($0) + 1) ? 1 : 0) == key }
                }
            } else if corners {
                for kind in 0..<3 {
                    groups.append(order.count)
                    order += trees.filter { layouts[$0]?.kind == kind }
                }
                groups.append(order.count)
            } else {
                groups.append(order.count)
                order += trees.filter { !three(root($0)) }
                groups.append(order.count)
                order += trees.filter { three(root($0)) }
                groups.append(order.count)
                groups.append(order.count)
            }
        }
        // Corners per vector slot: 12 per Haar stump, 24 per pair tree, 16 per LBP stump.
        var slotX: [Int] = [], slotY: [Int] = [], slotTilted: [Bool] = []
        let perNode = model.featureType == .haar ? 12 : 16
        func addNodeCorners(_ n: Int) {
            slotX += xs[(perNode * n)..<(perNode * n + perNode)]
            slotY += ys[(perNode * n)..<(perNode * n + perNode)]
            slotTilted += tiltedFlags[(perNode * n)..<(perNode * n + perNode)]
        }
        if corners {
            for t in order {
                guard let layout = layouts[t] else { continue }
                let padded = layout.corners + Array(repeating: (0, 0), count: 12 - layout.corners.count)
                slotX += padded.map(\.0)
                slotY += padded.map(\.1)
                slotTilted += Array(repeating: false, count: 12)
                let negative = SIMD4<UInt32>(repeating: layout.negative ? ~0 : 0)
                splats += [splat(0), splat(0), unsafeBitCast(negative, to: SIMD4<Float>.self), splat(model.nodes[t].threshold),
                           splat(model.leaves[2 * t]), splat(model.leaves[2 * t + 1])]
            }
        } else if isStump && model.featureType == .haar {
            for t in order {
                addNodeCorners(t)
                splats += weightSplats(t) + [splat(model.nodes[t].threshold), splat(model.leaves[2 * t]), splat(model.leaves[2 * t + 1])]
            }
        } else if isPairTree {
            for t in order {
                let tree = model.trees[t], root = model.nodes[tree.firstNode], child = model.nodes[tree.firstNode + 1]
                func leaf(_ link: Int) -> Float { model.leaves[tree.firstLeaf - link] }
                // outcome[g0][g1]: the leaf for root and child decisions (true = left).
                let onLeft = root.left == 1
                let childLeft = leaf(child.left), childRight = leaf(child.right)
                let other = onLeft ? leaf(root.right) : leaf(root.left)
                let outcomes = onLeft ? [other, other, childRight, childLeft] : [childRight, childLeft, other, other]
                for n in [tree.firstNode, tree.firstNode + 1] {
                    splats += weightSplats(n) + [splat(model.nodes[n].threshold)]
                }
                splats += outcomes.map(splat)
                addNodeCorners(tree.firstNode)
                addNodeCorners(tree.firstNode + 1)
            }
        } else if isStump {
            for t in order { addNodeCorners(t) }
        }
        vectorCornerX = slotX
        vectorCornerY = slotY
        vectorCornerTilted = slotTilted
        stageGroups = Buffer(groups)
        stumpSplats = Buffer(splats)
        cornersPerNode = isHaar ? 12 : 16
        let w = model.windowWidth, h = model.windowHeight
        normCorners = [(1, 1), (w - 1, 1), (1, h - 1), (w - 1, h - 1)]
        maxStageSize = model.stages.map(\.treeCount).max() ?? 1
    }
}
