import PhotoDecoding

/// The resizes that build `BlazeFace`'s pyramid from 8-bit gray or RGB images: one arbitrary
/// scale with an area-style tent filter (every source pixel contributes when shrinking), then
/// 2x2 box halving for each coarser level.
enum LevelResize {
    /// `image` scaled by `factor` (each side rounded, at least 1 pixel), same channels.
    ///
    /// Rows first: each source row is widened to Floats once, resampled horizontally into a ring of
    /// as many rows as one output row reads, and each output row sums its ring rows eight values at
    /// a time. Every value is the same chain of multiplies and adds, in the same order, as the
    /// filter written out plainly (LevelResizeTests checks it bit for bit).
    static func scaled(_ image: Image, by factor: Float) -> Image {
        let width = max(1, Int((Float(image.width) * factor).rounded()))
        let height = max(1, Int((Float(image.height) * factor).rounded()))
        if width == image.width && height == image.height { return image }
        let channels = image.channels
        let columns = Resampler.taps(sourceLength: image.width, outputLength: width)
        let rows = Resampler.taps(sourceLength: image.height, outputLength: height)
        let rowLength = width * channels
        // The column taps flattened (no array per output pixel in the inner loop).
        let maxTaps = columns.map(\.weights.count).max() ?? 1
        var columnFirst = [Int](repeating: 0, count: width)
        var columnCount = [Int](repeating: 0, count: width)
        var columnWeights = [Float](repeating: 0, count: width * maxTaps)
        for (x, tap) in columns.enumerated() {
            columnFirst[x] = tap.first * channels
            columnCount[x] = tap.weights.count
            for (k, w) in tap.weights.enumerated() { columnWeights[x * maxTaps + k] = w }
        }
        // Source rows resampled horizontally, in a ring of as many rows as one output row reads
        // (its taps are consecutive rows, so they never share a slot), so a 12 MP level needs a
        // few rows of Floats, not the whole image. One float of slack after each row and after
        // the widened source row: the RGB path loads and stores four lanes for three channels.
        let ringRows = rows.map(\.weights.count).max() ?? 1
        let ringStride = rowLength + 1
        var ring = [Float](repeating: 0, count: ringRows * ringStride)
        var ringSource = [Int](repeating: -1, count: ringRows)
        var line = [Float](repeating: 0, count: image.width * channels + 1)
        var taps = [UnsafePointer<Float>]()
        taps.reserveCapacity(ringRows)
        return image.pixels.withUnsafeBufferPointer { pixels in
            Image(width: width, height: height, channels: channels) { out in
                ring.withUnsafeMutableBufferPointer { ring in
                line.withUnsafeMutableBufferPointer { line in
                columnFirst.withUnsafeBufferPointer { columnFirst in
                columnCount.withUnsafeBufferPointer { columnCount in
                columnWeights.withUnsafeBufferPointer { columnWeights in
                    let widened = line.baseAddress!
                    /// Row `y` resampled horizontally: sum of weight x pixel over the taps, in order.
                    func horizontal(_ y: Int) -> UnsafePointer<Float> {
                        let slot = y % ringRows
                        let row = ring.baseAddress! + slot * ringStride
                        if ringSource[slot] == y { return UnsafePointer(row) }
                        ringSource[slot] = y
                        let source = pixels.baseAddress! + y * image.width * channels
                        for i in 0..<(image.width * channels) { widened[i] = Float(source[i]) }
                        if channels == 3 {
                            // RGB: a pixel's three sums as lanes of one vector (the fourth lane is
                            // the next pixel's red, ignored, and overwritten by the next store).
                            for x in 0..<width {
                                let weights = columnWeights.baseAddress! + x * maxTaps
                                var sum = SIMD4<Float>(repeating: 0)
                                var p = UnsafeRawPointer(widened + columnFirst[x])
                                for k in 0..<columnCount[x] {
                                    sum += SIMD4(repeating: weights[k]) * p.loadUnaligned(as: SIMD4<Float>.self)
                                    p += 3 * MemoryLayout<Float>.stride
                                }
                                UnsafeMutableRawPointer(row + 3 * x).storeBytes(of: sum, as: SIMD4<Float>.self)
                            }
                            return UnsafePointer(row)
                        }
                        for x in 0..<width {
                            let weights = columnWeights.baseAddress! + x * maxTaps
                            let count = columnCount[x]
                            for c in 0..<channels {
                                var sum: Float = 0
                                var p = widened + columnFirst[x] + c
                                for k in 0..<count {
                                    sum += weights[k] * p.pointee
                                    p += channels
                                }
                                row[x * channels + c] = sum
                            }
                        }
                        return UnsafePointer(row)
                    }
                    for (y, tap) in rows.enumerated() {
                        taps.removeAll(keepingCapacity: true)
                        for k in tap.weights.indices { taps.append(horizontal(tap.first + k)) }
                        let target = out.baseAddress! + y * rowLength
                        var i = 0
                        while i + 8 <= rowLength {
                            var total = SIMD8<Float>(repeating: 0)
                            for (k, w) in tap.weights.enumerated() {
                                total += SIMD8(repeating: w) * UnsafeRawPointer(taps[k] + i).loadUnaligned(as: SIMD8<Float>.self)
                            }
                            // Int(total + 0.5) clamped to 0...255, as the plain filter rounds, a lane
                            // at a time: SIMD8<Int32>(_:rounding:) is a generic lane loop here.
                            total += 0.5
                            for j in 0..<8 {
                                let v = total[j]
                                target[i + j] = v < 1 ? 0 : v >= 255 ? 255 : UInt8(truncatingIfNeeded: Int32(v))
                            }
                            i += 8
                        }
                        while i < rowLength {
                            var total: Float = 0
                            for (k, w) in tap.weights.enumerated() { total += w * taps[k][i] }
                            target[i] = UInt8(clamping: Int(total + 0.5))
                            i += 1
                        }
                    }
                }
                }
                }
                }
                }
            }
        }
    }

    /// `image` at half size, each output pixel the rounded mean of a 2x2 block (an odd last row or
    /// column is dropped).
    static func halved(_ image: Image) -> Image {
        let width = max(1, image.width / 2), height = max(1, image.height / 2)
        let channels = image.channels
        guard image.width >= 2, image.height >= 2 else { return image }
        return image.pixels.withUnsafeBufferPointer { pixels in
            Image(width: width, height: height, channels: channels) { out in
                let stride = image.width * channels
                for y in 0..<height {
                    let r0 = pixels.baseAddress! + 2 * y * stride
                    let r1 = r0 + stride
                    let target = out.baseAddress! + y * width * channels
                    for x in 0..<width {
                        for c in 0..<channels {
                            let i = 2 * x * channels + c
                            let sum = UInt16(r0[i]) + UInt16(r0[i + channels]) + UInt16(r1[i]) + UInt16(r1[i + channels])
                            target[x * channels + c] = UInt8((sum + 2) / 4)
                        }
                    }
                }
            }
        }
    }
}
