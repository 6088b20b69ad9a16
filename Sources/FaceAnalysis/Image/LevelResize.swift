import CNNKernels
import PhotoDecoding

/// The resizes that build `BlazeFace`'s pyramid from 8-bit gray or RGB images: one arbitrary
/// scale with an area-style tent filter (every source pixel contributes when shrinking), then
/// 2x2 box halving for each coarser level. The row loops are `ImageRows`, compiled once per
/// kernel set; `kernels` picks the set (the fastest this processor has, as for the network).
enum LevelResize {
    /// `image` scaled by `factor` (each side rounded, at least 1 pixel), same channels.
    ///
    /// Rows first: each source row is widened to Floats once, resampled horizontally into a ring of
    /// as many rows as one output row reads, and each output row sums its ring rows sixteen values
    /// at a time. Every value is the same chain of multiplies and adds, in the same order, as the
    /// filter written out plainly, less the terms whose weight is zero (`Filter`), which change no
    /// sum (LevelResizeTests checks it bit for bit).
    static func scaled(_ image: Image, by factor: Float, kernels: NetworkWorkspace.Kernels = .best) -> Image {
        scaled(image, by: factor, kernels.imageRows)
    }

    static func scaled<K: ImageRowKernelSet>(_ image: Image, by factor: Float, _: K.Type) -> Image {
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
        let splatted = channels == 3 ? columns.weights.map { SIMD4<Float>(repeating: $0) } : [.zero]
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
                        K.resampleRow(pixels.baseAddress! + y * sourceLength, sourceLength: sourceLength, widened: widened,
                                      into: row, width: width, channels: channels, first: columnFirst.baseAddress!,
                                      weights: columnWeights.baseAddress!, splatted: splatted.baseAddress!, taps: columns.taps)
                        return UnsafePointer(row)
                    }
                    rows.weights.withUnsafeBufferPointer { rowWeights in
                        for y in 0..<height {
                            let count = rows.count[y]
                            for k in 0..<count { taps[k] = resampledRow(rows.first[y] + k) }
                            let target = out.baseAddress! + y * rowLength
                            let weights = rowWeights.baseAddress! + y * rows.taps
                            let sources = UnsafePointer(taps.baseAddress!)
                            K.verticalRow(sources, weights: weights, taps: count, into: target, count: rowLength)
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

    /// `image` at half size, each output pixel the rounded mean of a 2x2 block (an odd last row or
    /// column is dropped).
    ///
    /// Each pair of rows is first summed into one row of UInt16 sixteen bytes at a time, then the
    /// neighbouring pixels of that row are added: integer sums, exact in any order.
    static func halved(_ image: Image, kernels: NetworkWorkspace.Kernels = .best) -> Image {
        halved(image, kernels.imageRows)
    }

    static func halved<K: ImageRowKernelSet>(_ image: Image, _: K.Type) -> Image {
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
                        K.halveRow(r0, r0 + stride, sums: s, into: out.baseAddress! + y * width * channels, width: width, channels: channels)
                    }
                }
            }
        }
    }
}
