/// The Haar lanes: a row's variance norms eight windows at a time, and one stage on four or
/// eight neighbouring windows summed in float, re-added in double for the lanes whose sum lies
/// too near the threshold for float to decide.
extension CascadeScanner {
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
    func haarNorms(_ c: Context, vectorRow: Int, positions: Int) {
        let normOut = rowNorm.base, alive = aliveBits.base
        let area = SIMD8<Double>(repeating: tables.normArea)
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
    func haarStage(_ c: Context, stage: Int, at p: Int, lanes: UInt8,
                   vectorRow: Int, rowOrigin: Int, step: Int) -> (UInt64, Int) {
        let s = c.vectorSum + vectorRow + p
        let factors = c.rowNorm + p
        let g = tables.stageGroups.base + 4 &* stage
        let first = tables.stageFirst.base[stage], middle = g[1], end = first + tables.stageSize.base[stage]
        let offsets = c.vectorOffsets, splats = tables.stumpSplats.base
        let low = tables.stageLow.base[stage], high = tables.stageHigh.base[stage]
        let integer = tables.integerWeights
        let zero = SIMD4<Int32>(repeating: 0)
        var below: UInt8, sure: UInt8, width: Int
        if lanes & 0xF0 == 0 {
            let factor = UnsafeRawPointer(factors).loadUnaligned(as: SIMD4<Float>.self)
            var total = SIMD4<Float>(repeating: 0)
            if tables.cornerMode {
                for j in first..<g[1] {
                    total += Self.haarCorners4(s, offsets + 12 &* j, splats + 6 &* j, kind: 0, factor: factor)
                }
                for j in g[1]..<g[2] {
                    total += Self.haarCorners4(s, offsets + 12 &* j, splats + 6 &* j, kind: 1, factor: factor)
                }
                for j in g[2]..<end {
                    total += Self.haarCorners4(s, offsets + 12 &* j, splats + 6 &* j, kind: 2, factor: factor)
                }
            } else if tables.isStump {
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
            if tables.cornerMode {
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
            } else if tables.isStump {
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
            let total = tables.isStump ? stumpStageSum(c, stage: s, at: window, norm: c.rowNorm[p + k])
                : treeStageSum(c, stage: s, at: window, norm: c.rowNorm[p + k])
            if total < Double(tables.stageThreshold.base[s]) {
                rejected |= 1 << UInt8(k)
            }
        }
        return rejected
    }
}
