import PhotoDecoding

/// The resizes that build `BlazeFace`'s pyramid from 8-bit gray or RGB images: one arbitrary
/// scale with an area-style tent filter (every source pixel contributes when shrinking), then
/// 2x2 box halving for each coarser level.
enum LevelResize {
    /// `image` scaled by `factor` (each side rounded, at least 1 pixel), same channels.
    ///
    /// Rows first: each source row is widened to Floats once, resampled horizontally into a ring of
    /// as many rows as one output row reads, and each output row sums its ring rows sixteen values
    /// at a time. Every value is the same chain of multiplies and adds, in the same order, as the
    /// filter written out plainly, less the terms whose weight is zero (`Filter`), which change no
    /// sum (LevelResizeTests checks it bit for bit).
    static func scaled(_ image: Image, by factor: Float) -> Image {
        let width = max(1, Int((Float(image.width) * factor).rounded()))
        let height = max(1, Int((Float(image.height) * factor).rounded()))
        if width == image.width && height == image.height { return image }
        let channels = image.channels
        let columns = Filter(Resampler.taps(sourceLength: image.width, outputLength: width), step: channels)
        let rows = Filter(Resampler.taps(sourceLength: image.height, outputLength: height), step: 1)
        let rowLength = width * channels, sourceLength = image.width * channels
        // Source rows resampled horizontally, in a ring of as many rows as one output row reads
        // (its taps are consecutive rows, so they never share a slot), so a 12 MP level needs a
        // few rows of Floats, not the whole image. One float of slack after each row: the RGB path
        // stores four lanes for three channels. The widened source row has zeros after it for the
        // padding taps (weight 0) of the last columns and the fourth lane of the RGB loads.
        let ringRows = rows.taps
        let ringStride = rowLength + 1
        var ring = [Float](repeating: 0, count: ringRows * ringStride)
        var ringSource = [Int](repeating: -1, count: ringRows)
        var line = [Float](repeating: 0, count: sourceLength + (columns.taps + 1) * channels)
        var taps = [UnsafePointer<Float>](repeating: UnsafePointer(bitPattern: 16)!, count: ringRows)
        // The RGB path multiplies whole pixels: each column weight repeated in four lanes.
        let splatted = channels == 3 ? columns.weights.map { SIMD4<Float>(repeating: $0) } : []
        return image.pixels.withUnsafeBufferPointer { pixels in
            Image(width: width, height: height, channels: channels) { out in
                ring.withUnsafeMutableBufferPointer { ring in
                line.withUnsafeMutableBufferPointer { line in
                ringSource.withUnsafeMutableBufferPointer { ringSource in
                taps.withUnsafeMutableBufferPointer { taps in
                columns.first.withUnsafeBufferPointer { columnFirst in
                columns.weights.withUnsafeBufferPointer { columnWeights in
                splatted.withUnsafeBufferPointer { splatted in
                    let widened = line.baseAddress!
                    /// Row `y` resampled horizontally, computed once while it stays in the ring.
                    func resampledRow(_ y: Int) -> UnsafePointer<Float> {
                        let slot = y % ringRows
                        let row = ring.baseAddress! + slot * ringStride
                        if ringSource[slot] == y { return UnsafePointer(row) }
                        ringSource[slot] = y
                        let source = pixels.baseAddress! + y * sourceLength
                        for i in 0..<sourceLength { widened[i] = Float(source[i]) }
                        if channels == 3 {
                            let weights = splatted.baseAddress!, first = columnFirst.baseAddress!
                            switch columns.taps {
                            case 2: horizontalRGB(widened, into: row, width: width, first: first, weights: weights, taps: 2)
                            case 3: horizontalRGB(widened, into: row, width: width, first: first, weights: weights, taps: 3)
                            case 4: horizontalRGB(widened, into: row, width: width, first: first, weights: weights, taps: 4)
                            case 5: horizontalRGB(widened, into: row, width: width, first: first, weights: weights, taps: 5)
                            default: horizontalRGB(widened, into: row, width: width, first: first, weights: weights, taps: columns.taps)
                            }
                        } else {
                            Self.horizontal(widened, into: row, width: width, channels: channels, first: columnFirst.baseAddress!,
                                       weights: columnWeights.baseAddress!, taps: columns.taps)
                        }
                        return UnsafePointer(row)
                    }
                    rows.weights.withUnsafeBufferPointer { rowWeights in
                        for y in 0..<height {
                            let count = rows.count[y]
                            for k in 0..<count { taps[k] = resampledRow(rows.first[y] + k) }
                            let target = out.baseAddress! + y * rowLength
                            let weights = rowWeights.baseAddress! + y * rows.taps
                            let sources = UnsafePointer(taps.baseAddress!)
                            switch count {
                            case 1: vertical(sources, weights: weights, taps: 1, into: target, count: rowLength)
                            case 2: vertical(sources, weights: weights, taps: 2, into: target, count: rowLength)
                            case 3: vertical(sources, weights: weights, taps: 3, into: target, count: rowLength)
                            case 4: vertical(sources, weights: weights, taps: 4, into: target, count: rowLength)
                            default: vertical(sources, weights: weights, taps: count, into: target, count: rowLength)
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
            }
        }
    }

    /// One axis of `scaled`'s filter with the zero weights left out: each output's first source
    /// element (pixel index times `step`), then `taps` weights per output, its nonzero ones (a
    /// run of consecutive source pixels) followed by zeros.
    ///
    /// Every weight and pixel is zero or positive, so a sum starting at +0 is never -0 and a term
    /// whose weight is zero adds +0, which leaves the sum as it was: a value summed without those
    /// terms is the same to the last bit. At 0.8 the tent spans 2.5 pixels, so an output reads 2
    /// or 3 source pixels rather than the 4 or 5 `Resampler.taps` lists.
    struct Filter {
        /// The largest number of nonzero weights of any output (at least 1).
        let taps: Int
        let first: [Int]
        /// Nonzero weights of each output: every output's are padded with zeros to `taps`.
        let count: [Int]
        let weights: [Float]

        init(_ all: [Resampler.Taps], step: Int) {
            var spans: [(first: Int, weights: ArraySlice<Float>)] = []
            spans.reserveCapacity(all.count)
            for tap in all {
                let start = tap.weights.firstIndex { $0 != 0 } ?? 0
                let end = (tap.weights.lastIndex { $0 != 0 } ?? 0) + 1
                spans.append((tap.first + start, tap.weights[start..<end]))
            }
            let taps = spans.map(\.weights.count).max() ?? 1
            var weights = [Float](repeating: 0, count: all.count * taps)
            for (index, span) in spans.enumerated() {
                for (k, w) in span.weights.enumerated() { weights[index * taps + k] = w }
            }
            self.taps = taps
            first = spans.map { $0.first * step }
            count = spans.map(\.weights.count)
            self.weights = weights
        }
    }

    /// One widened RGB row resampled horizontally, a pixel's three sums as the lanes of one vector
    /// (the fourth lane is the next pixel's red, ignored, and overwritten by the next store).
    /// `taps` is a literal at each call, so the loop over it unrolls.
    @inline(__always)
    private static func horizontalRGB(_ source: UnsafePointer<Float>, into row: UnsafeMutablePointer<Float>, width: Int,
                                      first: UnsafePointer<Int>, weights: UnsafePointer<SIMD4<Float>>, taps: Int) {
        for x in 0..<width {
            let w = weights + x * taps
            var p = UnsafeRawPointer(source + first[x])
            var sum = w[0] * p.loadUnaligned(as: SIMD4<Float>.self)
            for k in 1..<max(taps, 1) {
                p += 3 * MemoryLayout<Float>.stride
                sum += w[k] * p.loadUnaligned(as: SIMD4<Float>.self)
            }
            UnsafeMutableRawPointer(row + 3 * x).storeBytes(of: sum, as: SIMD4<Float>.self)
        }
    }

    /// One widened row of any channel count resampled horizontally, a value at a time.
    private static func horizontal(_ source: UnsafePointer<Float>, into row: UnsafeMutablePointer<Float>, width: Int, channels: Int,
                                   first: UnsafePointer<Int>, weights: UnsafePointer<Float>, taps: Int) {
        for x in 0..<width {
            let w = weights + x * taps
            for c in 0..<channels {
                var p = source + first[x] + c
                var sum = w[0] * p.pointee
                for k in 1..<max(taps, 1) {
                    p += channels
                    sum += w[k] * p.pointee
                }
                row[x * channels + c] = sum
            }
        }
    }

    /// An output row: the `taps` rows at `sources` weighted and summed in order, rounded and
    /// clamped to bytes, sixteen values at a time. `taps` is a literal at most calls.
    @inline(__always)
    private static func vertical(_ sources: UnsafePointer<UnsafePointer<Float>>, weights: UnsafePointer<Float>, taps: Int,
                                 into target: UnsafeMutablePointer<UInt8>, count: Int) {
        var i = 0
        while i + 16 <= count {
            var total = SIMD16(repeating: weights[0]) * UnsafeRawPointer(sources[0] + i).loadUnaligned(as: SIMD16<Float>.self)
            for k in 1..<max(taps, 1) {
                total += SIMD16(repeating: weights[k]) * UnsafeRawPointer(sources[k] + i).loadUnaligned(as: SIMD16<Float>.self)
            }
            UnsafeMutableRawPointer(target + i).storeBytes(of: rounded(total + 0.5), as: SIMD16<UInt8>.self)
            i += 16
        }
        while i < count {
            var total = weights[0] * sources[0][i]
            for k in 1..<max(taps, 1) { total += weights[k] * sources[k][i] }
            target[i] = UInt8(clamping: Int(total + 0.5))
            i += 1
        }
    }

    /// `UInt8(clamping: Int(v))` of each lane (v is never NaN), without a conversion per lane: v
    /// clamped to 0...255, rounded to the nearest integer by adding 2^23 (whose ulp is 1), one
    /// taken off where that rounded up, and the integer read from the low bits of 2^23 + it.
    @inline(__always)
    static func rounded(_ v: SIMD16<Float>) -> SIMD16<UInt8> {
        let magic = SIMD16<Float>(repeating: 8_388_608)
        let low = v.replacing(with: 0, where: v .< 0)
        let clamped = low.replacing(with: 255, where: low .> 255)
        let nearest = (clamped + magic) - magic
        let truncated = nearest.replacing(with: nearest - 1, where: nearest .> clamped)
        let bits = unsafeBitCast(truncated + magic, to: SIMD16<UInt32>.self)
        return SIMD16<UInt8>(truncatingIfNeeded: bits)
    }

    /// `image` at half size, each output pixel the rounded mean of a 2x2 block (an odd last row or
    /// column is dropped).
    ///
    /// Each pair of rows is first summed into one row of UInt16 sixteen bytes at a time, then the
    /// neighbouring pixels of that row are added: integer sums, exact in any order.
    static func halved(_ image: Image) -> Image {
        let width = max(1, image.width / 2), height = max(1, image.height / 2)
        let channels = image.channels
        guard image.width >= 2, image.height >= 2 else { return image }
        let stride = image.width * channels
        let pairLength = 2 * width * channels  // the bytes of a source row the output reads
        // Slack after the sums: the RGB path loads eight lanes for three channels.
        var sums = [UInt16](repeating: 0, count: pairLength + 16)
        return image.pixels.withUnsafeBufferPointer { pixels in
            Image(width: width, height: height, channels: channels) { out in
                sums.withUnsafeMutableBufferPointer { sums in
                    let s = sums.baseAddress!
                    for y in 0..<height {
                        let r0 = pixels.baseAddress! + 2 * y * stride
                        columnSums(r0, r0 + stride, into: s, count: pairLength)
                        let target = out.baseAddress! + y * width * channels
                        switch channels {
                        case 3: pairedRGB(s, into: target, width: width)
                        case 1: pairedGray(s, into: target, width: width)
                        default: paired(s, into: target, width: width, channels: channels)
                        }
                    }
                }
            }
        }
    }

    /// `r0[i] + r1[i]` for each of `count` bytes, sixteen at a time.
    @inline(__always)
    private static func columnSums(_ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>,
                                   into sums: UnsafeMutablePointer<UInt16>, count: Int) {
        var i = 0
        while i + 16 <= count {
            let a = SIMD16<UInt16>(truncatingIfNeeded: UnsafeRawPointer(r0 + i).loadUnaligned(as: SIMD16<UInt8>.self))
            let b = SIMD16<UInt16>(truncatingIfNeeded: UnsafeRawPointer(r1 + i).loadUnaligned(as: SIMD16<UInt8>.self))
            UnsafeMutableRawPointer(sums + i).storeBytes(of: a &+ b, as: SIMD16<UInt16>.self)
            i += 16
        }
        while i < count {
            sums[i] = UInt16(r0[i]) &+ UInt16(r1[i])
            i += 1
        }
    }

    /// RGB output pixels from a row of column sums: a pixel's three channels in the first lanes of
    /// one vector, its first four bytes stored (the fourth is overwritten by the next pixel's
    /// store; the last pixel is stored a byte at a time so no store passes the row).
    @inline(__always)
    private static func pairedRGB(_ sums: UnsafePointer<UInt16>, into target: UnsafeMutablePointer<UInt8>, width: Int) {
        let two = SIMD8<UInt16>(repeating: 2)
        for x in 0..<width {
            // Eight lanes, as cheap as four here, narrowed to bytes in one pack and stored as one
            // UInt32 (a SIMD4<UInt8> is put together a lane at a time).
            let p = UnsafeRawPointer(sums + 6 * x)
            let a = p.loadUnaligned(as: SIMD8<UInt16>.self)
            let b = p.loadUnaligned(fromByteOffset: 3 * MemoryLayout<UInt16>.stride, as: SIMD8<UInt16>.self)
            let mean = unsafeBitCast(SIMD8<UInt8>(truncatingIfNeeded: (a &+ b &+ two) &>> 2), to: UInt64.self)
            if x + 1 < width {
                UnsafeMutableRawPointer(target + 3 * x).storeBytes(of: UInt32(truncatingIfNeeded: mean), as: UInt32.self)
            } else {
                for c in 0..<3 { target[3 * x + c] = UInt8(truncatingIfNeeded: mean >> (8 * c)) }
            }
        }
    }

    /// Gray output pixels from a row of column sums, eight at a time: a pair of sums read as one
    /// UInt32 lane, its halves added.
    @inline(__always)
    private static func pairedGray(_ sums: UnsafePointer<UInt16>, into target: UnsafeMutablePointer<UInt8>, width: Int) {
        var x = 0
        while x + 8 <= width {
            let pairs = UnsafeRawPointer(sums + 2 * x).loadUnaligned(as: SIMD8<UInt32>.self)
            let total = (pairs & 0xFFFF) &+ (pairs &>> 16) &+ 2
            UnsafeMutableRawPointer(target + x).storeBytes(of: SIMD8<UInt8>(truncatingIfNeeded: total &>> 2), as: SIMD8<UInt8>.self)
            x += 8
        }
        paired(sums + 2 * x, into: target + x, width: width - x, channels: 1)
    }

    /// Output pixels of any channel count from a row of column sums, a value at a time.
    private static func paired(_ sums: UnsafePointer<UInt16>, into target: UnsafeMutablePointer<UInt8>, width: Int, channels: Int) {
        for x in 0..<width {
            for c in 0..<channels {
                let i = 2 * x * channels + c
                target[x * channels + c] = UInt8(truncatingIfNeeded: (sums[i] &+ sums[i + channels] &+ 2) &>> 2)
            }
        }
    }
}
