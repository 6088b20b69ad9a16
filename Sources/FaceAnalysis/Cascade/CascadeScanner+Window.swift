/// One window at a time, as OpenCV's `runAt`: the whole cascade when the vector stages cannot
/// run it, the stages after `vectorStages` for the windows they let through, and the exact
/// double sums that settle a Haar stage the float lanes could not decide.
extension CascadeScanner {
    /// OpenCV's `runAt`: -1 when the window is refused before any stage (a flat Haar window),
    /// 0 or -stage when a stage rejects it, 1 when every stage accepts it.
    func evaluate(_ c: Context, origin: Int) -> Int {
        var norm: Float = 1
        if tables.isHaar {
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
        var nf = tables.normArea * Double(valSquares) - Double(valSum) * Double(valSum)
        guard nf > 0 else { return nil }
        nf = nf.squareRoot()
        let factor = Float(1 / nf)
        return tables.normArea * Double(factor) < 0.1 ? factor : nil
    }

    /// A Haar node's weighted rectangle sum, in OpenCV's float arithmetic and order.
    @inline(__always)
    private func haarValue(_ c: Context, node: Int, at p: UnsafePointer<Int32>) -> Float {
        let o = c.offsets + node * 12, w = tables.nodeWeights.base + node * 3
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
        let word = tables.subsets.base[node * model.subsetSize + (code >> 5)]
        return word & (1 << Int32(code & 31)) != 0
    }

    /// One stump stage's leaf sum for one window, in double as OpenCV adds it.
    @inline(__always)
    func stumpStageSum(_ c: Context, stage s: Int, at p: UnsafePointer<Int32>, norm: Float) -> Double {
        var total: Double = 0
        let first = tables.stageFirst.base[s]
        for t in first..<(first + tables.stageSize.base[s]) {
            if tables.isHaar {
                let left = haarValue(c, node: t, at: p) * norm < tables.nodeThreshold.base[t]
                total += Double(left ? tables.leaves.base[2 * t] : tables.leaves.base[2 * t + 1])
            } else {
                total += tables.leafByCode.base[t * 256 + lbpCode(c, node: t, at: p)]
            }
        }
        return total
    }

    /// Stages from `fromStage` on for one window, as OpenCV's predictOrderedStump,
    /// predictCategoricalStump, predictOrdered and predictCategorical do them.
    func finish(_ c: Context, origin: Int, norm: Float, fromStage: Int) -> Int {
        let p = c.sum + origin
        var s = fromStage
        while s < tables.stageThreshold.count {
            prepareOffsets(throughStage: s)
            let total: Double
            if tables.isStump {
                total = stumpStageSum(c, stage: s, at: p, norm: norm)
            } else {
                total = treeStageSum(c, stage: s, at: p, norm: norm)
            }
            if total < Double(tables.stageThreshold.base[s]) { return -s }
            s += 1
        }
        return 1
    }

    func treeStageSum(_ c: Context, stage s: Int, at p: UnsafePointer<Int32>, norm: Float) -> Double {
        var total: Double = 0
        let first = tables.stageFirst.base[s]
        for t in first..<(first + tables.stageSize.base[s]) {
            let root = tables.treeFirstNode.base[t]
            var index = 0
            repeat {
                let node = root + index
                let goLeft: Bool
                if tables.isHaar {
                    goLeft = haarValue(c, node: node, at: p) * norm < tables.nodeThreshold.base[node]
                } else {
                    goLeft = subsetHas(node, lbpCode(c, node: node, at: p))
                }
                index = goLeft ? tables.nodeLeft.base[node] : tables.nodeRight.base[node]
            } while index > 0
            total += Double(tables.leaves.base[tables.treeFirstLeaf.base[t] - index])
        }
        return total
    }
}
