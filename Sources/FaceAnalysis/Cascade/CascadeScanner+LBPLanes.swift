/// The LBP lanes: one stage's codes for eight or sixteen neighbouring windows from the 16-bit
/// sum table, the leaves looked up and added per live window in double, as OpenCV adds them.
extension CascadeScanner {
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
    func lbpStage(_ c: Context, stage: Int, at p: Int, lanes: UInt16, vectorRow: Int) -> (UInt64, Int) {
        let s = c.narrowSum + vectorRow + p
        let first = tables.stageFirst.base[stage], count = tables.stageSize.base[stage]
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
        let table = tables.leafByCode.base + 256 &* first
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
        let threshold = SIMD2<Double>(repeating: Double(tables.stageThreshold.base[stage]))
        let bits = SIMD2<Int64>(1, 2), none = SIMD2<Int64>(repeating: 0)
        var below: Int64 = 0
        for h in 0..<(width / 2) {
            let pair = UnsafeRawPointer(totals + 2 * h).loadUnaligned(as: SIMD2<Double>.self)
            below |= none.replacing(with: bits, where: pair .< threshold).wrappedSum() &<< Int64(2 * h)
        }
        return (UInt64(bitPattern: below) & UInt64(lanes), width)
    }
}
