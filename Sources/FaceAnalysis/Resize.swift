import PhotoDecoding

/// Gray-image resizing. `bilinear` reproduces OpenCV's bit-exact bilinear resize
/// (`INTER_LINEAR_EXACT`, which `CascadeClassifier` uses for its pyramid) for 8-bit images, so
/// the detector sees exactly the pixels OpenCV sees; `toAnalysisSize` brings a decoded photo down
/// to the size the detector works at.
public enum Resize {
    /// Interpolation weights carry 8 fractional bits.
    static let weightOne: UInt32 = 256

    /// Downscales `image` so its short side is `shortSide`, keeping the aspect ratio (the long side
    /// rounds to nearest). Images already at or below that size come back unchanged (as gray).
    /// Colour images are converted to gray first.
    public static func toAnalysisSize(_ image: Image, shortSide: Int) -> Image {
        let gray = image.grayscale()
        let short = min(gray.width, gray.height)
        guard shortSide > 0, short > shortSide else { return gray }
        let ratio = Double(shortSide) / Double(short)
        let width = gray.width <= gray.height ? shortSide : max(1, Int((Double(gray.width) * ratio).rounded()))
        let height = gray.height < gray.width ? shortSide : max(1, Int((Double(gray.height) * ratio).rounded()))
        return bilinear(gray, width: width, height: height)
    }

    /// Resizes a gray `image` to `width` x `height` as OpenCV 4's `resize(..., INTER_LINEAR_EXACT)`
    /// does for 8-bit images: pixel-centre alignment, weights rounded to 8 fractional bits,
    /// edge pixels repeated, one rounding at the end, and a 2x2 box average when both axes shrink
    /// by exactly two. Colour input is converted to gray first; an empty source or target gives a
    /// zero-filled image of the target size.
    public static func bilinear(_ image: Image, width: Int, height: Int) -> Image {
        let source = image.grayscale()
        let w = max(width, 0), h = max(height, 0)
        guard w > 0, h > 0, source.width > 0, source.height > 0 else {
            return Image(width: w, height: h, channels: 1, pixels: [UInt8](repeating: 0, count: w * h))
        }
        if w == source.width && h == source.height { return source }
        let scratch = Scratch()
        return source.pixels.withUnsafeBufferPointer { src in
            Image(width: w, height: h, channels: 1) { dst in
                bilinear(src, width: source.width, height: source.height,
                         into: dst, width: w, height: h, scratch: scratch)
            }
        }
    }

    /// Reusable buffers for the raw-buffer kernel, so a pyramid can be built level after level
    /// without allocating.
    final class Scratch {
        var xOffsets: [Int] = []
        var xWeights: [UInt32] = []
        var rowA: [UInt32] = []
        var rowB: [UInt32] = []
        init() {}
    }

    /// One axis of the interpolation: for each target index the first source index and the
    /// weight of the second, and the range [low, high) of targets that interpolate (before it the
    /// first source pixel is repeated, from it on the last).
    private static func taps(source: Int, target: Int, offsets: inout [Int], weights: inout [UInt32]) -> (low: Int, high: Int) {
        // OpenCV derives the scale from the sizes, through the inverse, in double.
        let scale = 1.0 / (Double(target) / Double(source))
        var low = 0, high = target
        for d in 0..<target {
            let f = scale * (Double(d) + 0.5) - 0.5
            let i = Int(f.rounded(.down))
            if i >= 0 && source > 1 {
                if i < source - 1 {
                    offsets[d] = i
                    weights[d] = UInt32(((f - Double(i)) * Double(weightOne)).rounded(.toNearestOrEven))
                } else {
                    offsets[d] = source - 1
                    weights[d] = 0
                    high = min(high, d)
                }
            } else {
                offsets[d] = 0
                weights[d] = 0
                low = max(low, d + 1)
            }
        }
        return (low, high)
    }

    /// The resize kernel on raw buffers. `dst` must hold `dw * dh` bytes.
    static func bilinear(_ src: UnsafeBufferPointer<UInt8>, width sw: Int, height sh: Int,
                         into dst: UnsafeMutableBufferPointer<UInt8>, width dw: Int, height dh: Int,
                         scratch: Scratch) {
        precondition(sw > 0 && sh > 0 && src.count >= sw * sh && dst.count >= dw * dh)
        if dw == sw && dh == sh {
            for i in 0..<(dw * dh) { dst[i] = src[i] }
            return
        }
        let scaleX = 1.0 / (Double(dw) / Double(sw))
        let scaleY = 1.0 / (Double(dh) / Double(sh))
        let roundX = scaleX.rounded(.toNearestOrEven), roundY = scaleY.rounded(.toNearestOrEven)
        if roundX == 2, roundY == 2, abs(scaleX - roundX) < Double.ulpOfOne, abs(scaleY - roundY) < Double.ulpOfOne {
            halve(src, width: sw, into: dst, width: dw, height: dh)
            return
        }
        if scratch.xOffsets.count < dw {
            scratch.xOffsets = [Int](repeating: 0, count: dw)
            scratch.xWeights = [UInt32](repeating: 0, count: dw)
            scratch.rowA = [UInt32](repeating: 0, count: dw + 8)
            scratch.rowB = [UInt32](repeating: 0, count: dw + 8)
        }
        let (xLow, xHigh) = taps(source: sw, target: dw, offsets: &scratch.xOffsets, weights: &scratch.xWeights)
        var rowAIndex = -1, rowBIndex = -1
        scratch.xOffsets.withUnsafeBufferPointer { xofs in
        scratch.xWeights.withUnsafeBufferPointer { xw in
        scratch.rowA.withUnsafeMutableBufferPointer { bufA in
        scratch.rowB.withUnsafeMutableBufferPointer { bufB in
            var a = bufA, b = bufB
            let horizontalRow = { (row: Int, out: UnsafeMutableBufferPointer<UInt32>) in
                horizontal(src.baseAddress! + row * sw, width: sw, xofs: xofs, weights: xw,
                           low: xLow, high: xHigh, into: out, count: dw)
            }
            for dy in 0..<dh {
                let out = dst.baseAddress! + dy * dw
                let f = scaleY * (Double(dy) + 0.5) - 0.5
                let sy = Int(f.rounded(.down))
                if sy < 0 || sh == 1 || sy >= sh - 1 {
                    // Above the first or past the last row centre: that row, rounded from 8 bits.
                    let row = (sy < 0 || sh == 1) ? 0 : sh - 1
                    if rowAIndex != row {
                        horizontalRow(row, a)
                        rowAIndex = row
                    }
                    for x in 0..<dw { out[x] = UInt8(truncatingIfNeeded: (a[x] &+ 128) &>> 8) }
                    continue
                }
                let weight1 = UInt32(((f - Double(sy)) * Double(weightOne)).rounded(.toNearestOrEven))
                let weight0 = weightOne - weight1
                if rowAIndex != sy {
                    if rowBIndex == sy {
                        swap(&a, &b)
                        swap(&rowAIndex, &rowBIndex)
                    } else {
                        horizontalRow(sy, a)
                        rowAIndex = sy
                    }
                }
                if rowBIndex != sy + 1 {
                    horizontalRow(sy + 1, b)
                    rowBIndex = sy + 1
                }
                vertical(a.baseAddress!, b.baseAddress!, w0: weight0, w1: weight1, into: out, count: dw)
            }
        }}}}
    }

    /// One source row filtered horizontally, with 8 fractional bits.
    @inline(__always)
    private static func horizontal(_ s: UnsafePointer<UInt8>, width sw: Int, xofs: UnsafeBufferPointer<Int>,
                                   weights: UnsafeBufferPointer<UInt32>, low: Int, high: Int,
                                   into out: UnsafeMutableBufferPointer<UInt32>, count dw: Int) {
        let first = UInt32(s[0]) &* weightOne
        for dx in 0..<min(low, dw) { out[dx] = first }
        if low < high {
            for dx in low..<high {
                let sx = xofs[dx]
                let w1 = weights[dx]
                out[dx] = UInt32(s[sx]) &* (weightOne &- w1) &+ UInt32(s[sx + 1]) &* w1
            }
        }
        let last = UInt32(s[xofs[dw - 1]]) &* weightOne
        for dx in max(high, low)..<dw { out[dx] = last }
    }

    /// Two filtered rows blended vertically: 16 fractional bits, rounded once.
    @inline(__always)
    private static func vertical(_ r0: UnsafePointer<UInt32>, _ r1: UnsafePointer<UInt32>, w0: UInt32, w1: UInt32,
                                 into out: UnsafeMutablePointer<UInt8>, count dw: Int) {
        let v0 = SIMD8<UInt32>(repeating: w0), v1 = SIMD8<UInt32>(repeating: w1)
        let round = SIMD8<UInt32>(repeating: 1 << 15)
        var x = 0
        while x + 8 <= dw {
            let a = UnsafeRawPointer(r0 + x).loadUnaligned(as: SIMD8<UInt32>.self)
            let b = UnsafeRawPointer(r1 + x).loadUnaligned(as: SIMD8<UInt32>.self)
            let v = (a &* v0 &+ b &* v1 &+ round) &>> 16
            for k in 0..<8 { out[x + k] = UInt8(truncatingIfNeeded: v[k]) }
            x += 8
        }
        while x < dw {
            out[x] = UInt8(truncatingIfNeeded: (r0[x] &* w0 &+ r1[x] &* w1 &+ (1 << 15)) &>> 16)
            x += 1
        }
    }

    /// The exact 2x2 box average OpenCV substitutes when both axes shrink by two.
    private static func halve(_ src: UnsafeBufferPointer<UInt8>, width sw: Int,
                              into dst: UnsafeMutableBufferPointer<UInt8>, width dw: Int, height dh: Int) {
        for dy in 0..<dh {
            let r0 = 2 * dy * sw, r1 = r0 + sw
            for dx in 0..<dw {
                let s = Int(src[r0 + 2 * dx]) + Int(src[r0 + 2 * dx + 1]) + Int(src[r1 + 2 * dx]) + Int(src[r1 + 2 * dx + 1])
                dst[dy * dw + dx] = UInt8(truncatingIfNeeded: (s + 2) >> 2)
            }
        }
    }
}
