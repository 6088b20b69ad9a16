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
        /// One source-width row blended vertically, 8 fractional bits (at most 255 * 256).
        var column: [UInt16] = []
        init() {}
    }

    /// One axis of the interpolation: for each target index the first source index and the
    /// weight of the second. Before the first source pixel centre and past the last one the
    /// edge pixel is repeated (weight 0 on an edge index).
    private static func taps(source: Int, target: Int, offsets: inout [Int], weights: inout [UInt32]) {
        // OpenCV derives the scale from the sizes, through the inverse, in double.
        let scale = 1.0 / (Double(target) / Double(source))
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
                }
            } else {
                offsets[d] = 0
                weights[d] = 0
            }
        }
    }

    /// The resize kernel on raw buffers. `dst` must hold `dw * dh` bytes.
    ///
    /// OpenCV filters rows horizontally first (8 fractional bits, no rounding) and then blends
    /// two of them vertically, rounding once from 16 fractional bits. Without intermediate
    /// rounding the result is the same bilinear form whichever axis goes first, and no term
    /// exceeds 32 bits, so this kernel blends the two source rows first (a dense SIMD pass in
    /// 16-bit lanes over the source width) and then interpolates the single blended row
    /// horizontally, one look-up pair per target pixel instead of two.
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
        }
        // One entry past the row: an edge tap reads it with weight 0.
        if scratch.column.count < sw + 1 { scratch.column = [UInt16](repeating: 0, count: sw + 1) }
        taps(source: sw, target: dw, offsets: &scratch.xOffsets, weights: &scratch.xWeights)
        scratch.xOffsets.withUnsafeBufferPointer { xofs in
        scratch.xWeights.withUnsafeBufferPointer { xw in
        scratch.column.withUnsafeMutableBufferPointer { column in
            let source = src.baseAddress!, blended = column.baseAddress!
            let offsets = xofs.baseAddress!, weights = xw.baseAddress!
            for dy in 0..<dh {
                let f = scaleY * (Double(dy) + 0.5) - 0.5
                let sy = Int(f.rounded(.down))
                let row0: UnsafePointer<UInt8>, row1: UnsafePointer<UInt8>, weight1: UInt16
                if sy < 0 || sh == 1 || sy >= sh - 1 {
                    // Above the first or past the last row centre: that row alone.
                    row0 = source + ((sy < 0 || sh == 1) ? 0 : sh - 1) * sw
                    row1 = row0
                    weight1 = 0
                } else {
                    row0 = source + sy * sw
                    row1 = row0 + sw
                    weight1 = UInt16(((f - Double(sy)) * Double(weightOne)).rounded(.toNearestOrEven))
                }
                vertical(row0, row1, w0: UInt16(weightOne) &- weight1, w1: weight1, into: blended, count: sw)
                horizontal(blended, offsets: offsets, weights: weights, into: dst.baseAddress! + dy * dw, count: dw)
            }
        }}}
    }

    /// Two source rows blended: 8 fractional bits, exact in 16 bits (at most 255 * 256).
    @inline(__always)
    private static func vertical(_ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>, w0: UInt16, w1: UInt16,
                                 into out: UnsafeMutablePointer<UInt16>, count sw: Int) {
        let v0 = SIMD8<UInt16>(repeating: w0), v1 = SIMD8<UInt16>(repeating: w1)
        var x = 0
        while x + 8 <= sw {
            let a = SIMD8<UInt16>(truncatingIfNeeded: UnsafeRawPointer(r0 + x).loadUnaligned(as: SIMD8<UInt8>.self))
            let b = SIMD8<UInt16>(truncatingIfNeeded: UnsafeRawPointer(r1 + x).loadUnaligned(as: SIMD8<UInt8>.self))
            UnsafeMutableRawPointer(out + x).storeBytes(of: a &* v0 &+ b &* v1, as: SIMD8<UInt16>.self)
            x += 8
        }
        while x < sw {
            out[x] = UInt16(r0[x]) &* w0 &+ UInt16(r1[x]) &* w1
            x += 1
        }
    }

    /// The blended row interpolated horizontally and rounded once from 16 fractional bits.
    @inline(__always)
    private static func horizontal(_ row: UnsafePointer<UInt16>, offsets: UnsafePointer<Int>, weights: UnsafePointer<UInt32>,
                                   into out: UnsafeMutablePointer<UInt8>, count dw: Int) {
        for dx in 0..<dw {
            let sx = offsets[dx], w1 = weights[dx]
            let value = UInt32(row[sx]) &* (weightOne &- w1) &+ UInt32(row[sx &+ 1]) &* w1 &+ (1 << 15)
            out[dx] = UInt8(truncatingIfNeeded: value &>> 16)
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
