/// A row at a time: the bitmap of the row's live windows and the stage-by-stage walk that
/// hands groups of neighbouring live windows to the Haar or LBP lanes, then drops the windows
/// OpenCV skips after stage 0, so later stages run only where OpenCV runs them.
extension CascadeScanner {
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
    static func next(_ bits: UnsafePointer<UInt64>, from p: Int, limit: Int) -> Int {
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
    func vectorRow(_ c: Context, rowOrigin: Int, vectorRow: Int, positions: Int, step: Int) {
        let alive = aliveBits.base, firstRejected = firstRejectedBits.base
        let words = positions / 64 + 3
        for w in 0..<words { alive[w] = 0; firstRejected[w] = 0 }
        if tables.isHaar {
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
                if tables.isHaar {
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
}
