/// The row loops of the image work around the network: the pyramid's resampling and halving
/// (`LevelResize` in FaceAnalysis) and the tile fill's `Float(byte) / 127.5 - 1`. Like the
/// network's kernels they are inlinable source that each kernel set compiles for its own target
/// (the baseline build's SSE2 does a quarter of what AVX-512 does per instruction), with the same
/// operations in the same order everywhere, so every set gives the same bits (LevelResizeTests
/// and BlazeFaceFillTests compare them).
public protocol ImageRowKernelSet {
    /// One source row of `sourceLength` bytes widened to Floats in `widened` (room for
    /// `sourceLength` plus the taps' padding, zeros past the row) and resampled horizontally into
    /// `row`: output x is the sum over k < `taps` of `weights[x * taps + k]` times the value at
    /// `first[x] + k * channels`, in that order (`splatted` is `weights` with each weight in four
    /// lanes, for three channels).
    static func resampleRow(_ source: UnsafePointer<UInt8>, sourceLength: Int, widened: UnsafeMutablePointer<Float>,
                            into row: UnsafeMutablePointer<Float>, width: Int, channels: Int, first: UnsafePointer<Int>,
                            weights: UnsafePointer<Float>, splatted: UnsafePointer<SIMD4<Float>>, taps: Int)
    /// An output row: the `taps` rows at `sources` weighted by `weights` and summed in order,
    /// plus 0.5, clamped and truncated to bytes.
    static func verticalRow(_ sources: UnsafePointer<UnsafePointer<Float>>, weights: UnsafePointer<Float>, taps: Int,
                            into target: UnsafeMutablePointer<UInt8>, count: Int)
    /// An output row of a 2x2 box halving: source rows `r0` and `r1` summed into `sums` (room for
    /// `2 * width * channels + 16`), then each 2x2 block's rounded mean.
    static func halveRow(_ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>, sums: UnsafeMutablePointer<UInt16>,
                         into target: UnsafeMutablePointer<UInt8>, width: Int, channels: Int)
    /// `Float(byte) / 127.5 - 1` for `count` bytes.
    static func normalizedRow(_ source: UnsafePointer<UInt8>, into row: UnsafeMutablePointer<Float>, count: Int)
}

/// Each set's conformance forwards to `ImageRows` in a function of its own module (not a
/// protocol extension's inlinable default, which a generic caller would inline into its own,
/// baseline code), so the rows are compiled for that set's target.
extension PortableKernels: ImageRowKernelSet {
    public static func resampleRow(_ source: UnsafePointer<UInt8>, sourceLength: Int, widened: UnsafeMutablePointer<Float>,
                                   into row: UnsafeMutablePointer<Float>, width: Int, channels: Int, first: UnsafePointer<Int>,
                                   weights: UnsafePointer<Float>, splatted: UnsafePointer<SIMD4<Float>>, taps: Int) {
        ImageRows.resampleRow(source, sourceLength: sourceLength, widened: widened, into: row, width: width, channels: channels,
                              first: first, weights: weights, splatted: splatted, taps: taps)
    }

    public static func verticalRow(_ sources: UnsafePointer<UnsafePointer<Float>>, weights: UnsafePointer<Float>, taps: Int,
                                   into target: UnsafeMutablePointer<UInt8>, count: Int) {
        ImageRows.verticalRow(sources, weights: weights, taps: taps, into: target, count: count)
    }

    public static func halveRow(_ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>, sums: UnsafeMutablePointer<UInt16>,
                                into target: UnsafeMutablePointer<UInt8>, width: Int, channels: Int) {
        ImageRows.halveRow(r0, r1, sums: sums, into: target, width: width, channels: channels)
    }

    public static func normalizedRow(_ source: UnsafePointer<UInt8>, into row: UnsafeMutablePointer<Float>, count: Int) {
        ImageRows.normalizedRow(source, into: row, count: count)
    }
}

/// The source of `ImageRowKernelSet`'s rows.
public enum ImageRows {
    @inlinable @inline(__always)
    public static func resampleRow(_ source: UnsafePointer<UInt8>, sourceLength: Int, widened: UnsafeMutablePointer<Float>,
                                   into row: UnsafeMutablePointer<Float>, width: Int, channels: Int, first: UnsafePointer<Int>,
                                   weights: UnsafePointer<Float>, splatted: UnsafePointer<SIMD4<Float>>, taps: Int) {
        for i in 0..<sourceLength { widened[i] = Float(source[i]) }
        if channels == 3 {
            // `taps` a literal at each call, so the loop over it unrolls.
            switch taps {
            case 2: horizontalRGB(widened, into: row, width: width, first: first, weights: splatted, taps: 2)
            case 3: horizontalRGB(widened, into: row, width: width, first: first, weights: splatted, taps: 3)
            case 4: horizontalRGB(widened, into: row, width: width, first: first, weights: splatted, taps: 4)
            case 5: horizontalRGB(widened, into: row, width: width, first: first, weights: splatted, taps: 5)
            default: horizontalRGB(widened, into: row, width: width, first: first, weights: splatted, taps: taps)
            }
        } else {
            horizontal(widened, into: row, width: width, channels: channels, first: first, weights: weights, taps: taps)
        }
    }

    /// One widened RGB row resampled horizontally, a pixel's three sums as the lanes of one vector
    /// (the fourth lane is the next pixel's red, ignored, and overwritten by the next store).
    @inlinable @inline(__always)
    static func horizontalRGB(_ source: UnsafePointer<Float>, into row: UnsafeMutablePointer<Float>, width: Int,
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
    @inlinable
    static func horizontal(_ source: UnsafePointer<Float>, into row: UnsafeMutablePointer<Float>, width: Int, channels: Int,
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

    @inlinable @inline(__always)
    public static func verticalRow(_ sources: UnsafePointer<UnsafePointer<Float>>, weights: UnsafePointer<Float>, taps: Int,
                                   into target: UnsafeMutablePointer<UInt8>, count: Int) {
        switch taps {
        case 1: vertical(sources, weights: weights, taps: 1, into: target, count: count)
        case 2: vertical(sources, weights: weights, taps: 2, into: target, count: count)
        case 3: vertical(sources, weights: weights, taps: 3, into: target, count: count)
        case 4: vertical(sources, weights: weights, taps: 4, into: target, count: count)
        default: vertical(sources, weights: weights, taps: taps, into: target, count: count)
        }
    }

    /// `verticalRow` sixteen values at a time; `taps` is a literal at most calls. Transparent: as
    /// merely inlinable it stayed a call into the baseline build's copy.
    @_transparent @usableFromInline
    static func vertical(_ sources: UnsafePointer<UnsafePointer<Float>>, weights: UnsafePointer<Float>, taps: Int,
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
    @inlinable @inline(__always)
    public static func rounded(_ v: SIMD16<Float>) -> SIMD16<UInt8> {
        let magic = SIMD16<Float>(repeating: 8_388_608)
        let low = v.replacing(with: 0, where: v .< 0)
        let clamped = low.replacing(with: 255, where: low .> 255)
        let nearest = (clamped + magic) - magic
        let truncated = nearest.replacing(with: nearest - 1, where: nearest .> clamped)
        let bits = unsafeBitCast(truncated + magic, to: SIMD16<UInt32>.self)
        return SIMD16<UInt8>(truncatingIfNeeded: bits)
    }

    /// Each pair of rows is first summed into one row of UInt16 sixteen bytes at a time, then the
    /// neighbouring pixels of that row are added: integer sums, exact in any order.
    @inlinable @inline(__always)
    public static func halveRow(_ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>, sums: UnsafeMutablePointer<UInt16>,
                                into target: UnsafeMutablePointer<UInt8>, width: Int, channels: Int) {
        columnSums(r0, r1, into: sums, count: 2 * width * channels)
        switch channels {
        case 3: pairedRGB(sums, into: target, width: width)
        case 1: pairedGray(sums, into: target, width: width)
        default: paired(sums, into: target, width: width, channels: channels)
        }
    }

    /// `r0[i] + r1[i]` for each of `count` bytes, sixteen at a time.
    @inlinable @inline(__always)
    static func columnSums(_ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>,
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
    @inlinable @inline(__always)
    static func pairedRGB(_ sums: UnsafePointer<UInt16>, into target: UnsafeMutablePointer<UInt8>, width: Int) {
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
    @inlinable @inline(__always)
    static func pairedGray(_ sums: UnsafePointer<UInt16>, into target: UnsafeMutablePointer<UInt8>, width: Int) {
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
    @inlinable
    static func paired(_ sums: UnsafePointer<UInt16>, into target: UnsafeMutablePointer<UInt8>, width: Int, channels: Int) {
        for x in 0..<width {
            for c in 0..<channels {
                let i = 2 * x * channels + c
                target[x * channels + c] = UInt8(truncatingIfNeeded: (sums[i] &+ sums[i + channels] &+ 2) &>> 2)
            }
        }
    }

    /// Written as a plain loop, which the optimiser vectorises (widen, convert, divide, add): a
    /// vector division rounds each lane as the scalar one does, so the values are the same to the bit.
    @inlinable @inline(__always)
    public static func normalizedRow(_ source: UnsafePointer<UInt8>, into row: UnsafeMutablePointer<Float>, count: Int) {
        for i in 0..<count { row[i] = Float(source[i]) / 127.5 - 1 }
    }
}
