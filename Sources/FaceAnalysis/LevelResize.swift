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
        // Horizontal pass into Float rows, only for the source rows some output row reads.
        let firstRow = rows.first?.first ?? 0
        let lastRow = (rows.last.map { $0.first + $0.weights.count } ?? image.height) - 1
        let usedRows = lastRow - firstRow + 1
        var horizontal = [Float](repeating: 0, count: usedRows * width * channels)
        image.pixels.withUnsafeBufferPointer { pixels in
            horizontal.withUnsafeMutableBufferPointer { out in
                for y in 0..<usedRows {
                    let source = pixels.baseAddress! + (firstRow + y) * image.width * channels
                    let target = out.baseAddress! + y * width * channels
                    for (x, tap) in columns.enumerated() {
                        tap.weights.withUnsafeBufferPointer { weights in
                            for c in 0..<channels {
                                var sum: Float = 0
                                var p = source + tap.first * channels + c
                                for w in weights {
                                    sum += w * Float(p.pointee)
                                    p += channels
                                }
                                target[x * channels + c] = sum
                            }
                        }
                    }
                }
            }
        }
        return Image(width: width, height: height, channels: channels) { out in
            horizontal.withUnsafeBufferPointer { h in
                let rowLength = width * channels
                for (y, tap) in rows.enumerated() {
                    let target = out.baseAddress! + y * rowLength
                    for i in 0..<rowLength {
                        var sum: Float = 0
                        for (k, w) in tap.weights.enumerated() {
                            sum += w * h[(tap.first - firstRow + k) * rowLength + i]
                        }
                        target[i] = UInt8(clamping: Int(sum + 0.5))
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
