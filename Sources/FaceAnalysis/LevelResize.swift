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
        // Source rows resampled horizontally, kept only while an output row still needs them (the
        // windows slide down), so a 12 MP level needs a few rows of Floats, not the whole image.
        var cache: [Int: [Float]] = [:]
        func horizontal(_ y: Int, _ pixels: UnsafeBufferPointer<UInt8>) -> [Float] {
            if let row = cache[y] { return row }
            var row = [Float](repeating: 0, count: rowLength)
            let source = pixels.baseAddress! + y * image.width * channels
            for (x, tap) in columns.enumerated() {
                for c in 0..<channels {
                    var sum: Float = 0
                    var p = source + tap.first * channels + c
                    for w in tap.weights {
                        sum += w * Float(p.pointee)
                        p += channels
                    }
                    row[x * channels + c] = sum
                }
            }
            cache[y] = row
            return row
        }
        return image.pixels.withUnsafeBufferPointer { pixels in
            Image(width: width, height: height, channels: channels) { out in
                var sums = [Float](repeating: 0, count: rowLength)
                for (y, tap) in rows.enumerated() {
                    cache = cache.filter { $0.key >= tap.first }
                    for i in 0..<rowLength { sums[i] = 0 }
                    for (k, w) in tap.weights.enumerated() {
                        let row = horizontal(tap.first + k, pixels)
                        for i in 0..<rowLength { sums[i] += w * row[i] }
                    }
                    let target = out.baseAddress! + y * rowLength
                    for i in 0..<rowLength { target[i] = UInt8(clamping: Int(sums[i] + 0.5)) }
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
