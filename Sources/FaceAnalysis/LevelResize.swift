import PhotoDecoding

/// The resizes that build `BlazeFace`'s pyramid from 8-bit gray or RGB images: one arbitrary
/// scale with an area-style tent filter (every source pixel contributes when shrinking), then
/// 2x2 box halving for each coarser level.
enum LevelResize {
    /// `image` scaled by `factor` (each side rounded, at least 1 pixel), same channels.
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
        // few rows of Floats, not the whole image.
        let ringRows = rows.map(\.weights.count).max() ?? 1
        var ring = [Float](repeating: 0, count: ringRows * rowLength)
        var ringSource = [Int](repeating: -1, count: ringRows)
        var sums = [Float](repeating: 0, count: rowLength)
        return image.pixels.withUnsafeBufferPointer { pixels in
            Image(width: width, height: height, channels: channels) { out in
                ring.withUnsafeMutableBufferPointer { ring in
                columnFirst.withUnsafeBufferPointer { columnFirst in
                columnCount.withUnsafeBufferPointer { columnCount in
                columnWeights.withUnsafeBufferPointer { columnWeights in
                sums.withUnsafeMutableBufferPointer { sums in
                    /// Row `y` resampled horizontally: sum of weight x pixel over the taps, in order.
                    func horizontal(_ y: Int) -> UnsafeMutablePointer<Float> {
                        let slot = y % ringRows
                        let row = ring.baseAddress! + slot * rowLength
                        if ringSource[slot] == y { return row }
                        ringSource[slot] = y
                        let source = pixels.baseAddress! + y * image.width * channels
                        if channels == 3 {
                            // RGB: the three sums of a pixel side by side, the same order of adds.
                            for x in 0..<width {
                                let weights = columnWeights.baseAddress! + x * maxTaps
                                var r: Float = 0, g: Float = 0, b: Float = 0
                                var p = source + columnFirst[x]
                                for k in 0..<columnCount[x] {
                                    let w = weights[k]
                                    r += w * Float(p[0]); g += w * Float(p[1]); b += w * Float(p[2])
                                    p += 3
                                }
                                row[3 * x] = r; row[3 * x + 1] = g; row[3 * x + 2] = b
                            }
                            return row
                        }
                        for x in 0..<width {
                            let weights = columnWeights.baseAddress! + x * maxTaps
                            let count = columnCount[x]
                            for c in 0..<channels {
                                var sum: Float = 0
                                var p = source + columnFirst[x] + c
                                for k in 0..<count {
                                    sum += weights[k] * Float(p.pointee)
                                    p += channels
                                }
                                row[x * channels + c] = sum
                            }
                        }
                        return row
                    }
                    let total = sums.baseAddress!
                    for (y, tap) in rows.enumerated() {
                        total.update(repeating: 0, count: rowLength)
                        for (k, w) in tap.weights.enumerated() {
                            let row = horizontal(tap.first + k)
                            for i in 0..<rowLength { total[i] += w * row[i] }
                        }
                        let target = out.baseAddress! + y * rowLength
                        for i in 0..<rowLength { target[i] = UInt8(clamping: Int(total[i] + 0.5)) }
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
