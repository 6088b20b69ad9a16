import PhotoDecoding

/// Levels: the image resized to one pyramid level and the tables its stages read (the sum
/// tables split into even and odd columns for a level scanned every second column, or narrowed
/// to 16 bits for LBP), built once per level so the scan loop only reads. Feature offsets are
/// made valid for a level only as deep as its windows reach, since most levels never reach the
/// deep stages.
extension CascadeScanner {
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
        narrowOnly = !tables.isHaar && vectorStages > 0 && vectorStages == tables.stageThreshold.count
        levelPixels.withUnsafeBufferPointer { pixels in
            let levelPixels = UnsafeBufferPointer(rebasing: pixels[0..<count])
            if narrowOnly {
                narrowIntegral(levelPixels, width: levelWidth, height: levelHeight, split: split)
            } else {
                integral.compute(levelPixels, width: levelWidth, height: levelHeight, tilted: tables.tilted, squares: tables.isHaar)
            }
        }
        if vectorStages > 0 && !narrowOnly {
            if tables.isHaar {
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
        let sumRows = tables.tilted ? 2 * rows : rows
        let half = vectorStride
        let sumPlane = sumRows * half, squarePlane = rows * half
        let pad = IntegralImage.readPadding
        if splitSum.count < 2 * sumPlane + pad { splitSum = Buffer(count: 2 * sumPlane + pad) }
        if splitSquares.count < 2 * squarePlane + pad { splitSquares = Buffer(count: 2 * squarePlane + pad) }
        Self.deinterleave(integral.sum.baseAddress!, rows: sumRows, stride: stride, into: splitSum.base, half: half, plane: sumPlane)
        Self.deinterleave(integral.squares.baseAddress!, rows: rows, stride: stride, into: splitSquares.base, half: half,
                          plane: squarePlane)
    }

    /// `rows` rows of `stride` values: the even columns to `target`'s first plane and the odd ones
    /// to the plane `plane` values on, `half` values a row (an odd last column goes with the even).
    @inline(__always)
    private static func deinterleave<T>(_ source: UnsafeMutablePointer<T>, rows: Int, stride: Int,
                                        into target: UnsafeMutablePointer<T>, half: Int, plane: Int) {
        for r in 0..<rows {
            let row = source + r * stride
            let even = target + r * half, odd = target + plane + r * half
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
        let sumRows = tables.isHaar && tables.tilted ? 2 * levelRows : levelRows
        return (sumRows * vectorStride, levelRows * vectorStride)
    }

    private func computeNormOffsets() {
        let stride = self.stride, vectorStride = self.vectorStride, split = levelSplit
        let (sumPlane, squarePlane) = planes
        func linear(_ p: (x: Int, y: Int)) -> Int { p.y * stride + p.x }
        func vector(_ p: (x: Int, y: Int), plane: Int) -> Int {
            split ? (p.x & 1) * plane + p.y * vectorStride + (p.x >> 1) : linear(p)
        }
        let n = tables.normCorners
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
    func prepareOffsets(throughStage s: Int) {
        let end = tables.stageNodeEnd.base[s]
        if end > preparedNodes { computeLinearOffsets(nodesBelow: end) }
    }

    /// The same for the vector offsets, counted in trees.
    @inline(__always)
    func prepareVectorOffsets(throughStage s: Int) {
        let end = tables.stageFirst.base[s] + tables.stageSize.base[s]
        if end > preparedVector { computeVectorOffsets(positionsBelow: end) }
    }

    private func computeLinearOffsets(nodesBelow end: Int) {
        let tiltedBase = integral.tiltedOffset
        let stride = self.stride
        let from = preparedNodes * tables.cornersPerNode, to = end * tables.cornersPerNode
        tables.cornerX.withUnsafeBufferPointer { xs in
        tables.cornerY.withUnsafeBufferPointer { ys in
        tables.cornerTilted.withUnsafeBufferPointer { tiltedFlags in
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
        let slots = tables.cornersPerNode * (tables.isPairTree ? 2 : 1)
        tables.vectorCornerX.withUnsafeBufferPointer { xs in
        tables.vectorCornerY.withUnsafeBufferPointer { ys in
        tables.vectorCornerTilted.withUnsafeBufferPointer { tiltedFlags in
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
}
