import _Builtin_intrinsics.intel
import CNNKernels

/// The 3x3 depthwise convolution sixteen channels wide. Each output is the chain of multiply-adds
/// the AVX2 set's kernel (`NetworkKernels.depthwise3x3` with FMA) computes, in the same order, so
/// the two sets give the same bits; only the width and the loads differ:
/// - a block of 16 channels is one ZMM vector (a 64-byte line of a pixel's channels), so no line
///   is fetched again for a second block of 8;
/// - stride-1 rows are computed two outputs at a time, which share two of their three columns, so
///   a row of inputs is loaded 2 times per 2 outputs instead of 3;
/// - a block of 8 channels left at the end runs the same chain eight wide;
/// - quantised outputs go through integers (`Quantizer`), the same bytes as the shared Float
///   quantisation in a third of the instructions.
/// Written with the instructions' intrinsics: the SIMD protocol's generic operators compile to
/// lane loops, which the optimiser only half turns back into vectors.
extension AVX512Kernels {
    /// The lane widths the depthwise kernel runs at, with the stores it needs.
    protocol DepthwiseLanes: SIMD where Scalar == Float {
        static func at(_ p: UnsafePointer<Float>) -> Self
        /// `self + a * b` rounded once.
        func multiplyAdd(_ a: Self, _ b: Self) -> Self
        func plus(_ a: Self) -> Self
        func times(_ a: Self) -> Self
        /// `vmaxps`: `self` where it is greater than `floor`, else `floor`. With a floor of 0 this
        /// is `NetworkKernels.relu8` (-0 stays -0, as there); with a floor of -infinity, nothing.
        func orAbove(_ floor: Self) -> Self
        /// Stores the vector at value `index` of `output`: Floats, or with `q` quantised bytes.
        func store(_ output: UnsafeMutableRawPointer, _ index: Int, _ q: Quantizer?)
    }

    /// `NetworkKernels.quantized8` through integers: `vcvtps2dq` rounds the scaled value to
    /// nearest even as `rounded(.toNearestOrEven)` does, the zero point is added as an integer,
    /// and the clamp to 0...255 is a `vpmaxsd` and the unsigned saturation of `vpmovusdb`. The
    /// scaled value is first capped at 2^16, where the Floats would have clamped to 255 too, so a
    /// value past Int32's range cannot wrap to 0.
    struct Quantizer {
        var inverse: Float
        var zeroPoint: Int32
        static let cap: Float = 65536

        init(_ q: NetworkKernels.Quantization) {
            inverse = 1 / q.scale
            zeroPoint = q.zeroPoint
        }
    }

    static func depthwise16(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                            stride: Int, padTop: Int, padLeft: Int,
                            weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                            output: UnsafeMutableRawPointer, outHeight: Int, outWidth: Int, relu: Bool,
                            quantization: NetworkKernels.Quantization?) {
        let c = channels
        let firstInterior = padLeft > 0 ? 1 : 0
        var lastInterior = outWidth - 1
        while lastInterior >= firstInterior && lastInterior * stride - padLeft + 2 >= width { lastInterior -= 1 }
        let quantizer = quantization.map(Quantizer.init)
        let floor: Float = relu ? 0 : -.infinity
        for oy in 0..<outHeight {
            let iy0 = oy * stride - padTop
            let rows = (iy0 >= 0 && iy0 < height ? input + iy0 * width * c : nil,
                        iy0 + 1 >= 0 && iy0 + 1 < height ? input + (iy0 + 1) * width * c : nil,
                        iy0 + 2 >= 0 && iy0 + 2 < height ? input + (iy0 + 2) * width * c : nil)
            let geometry = RowGeometry(width: width, channels: c, stride: stride, padLeft: padLeft, outWidth: outWidth,
                                       firstInterior: firstInterior, lastInterior: lastInterior, floor: floor,
                                       outputBase: oy * outWidth * c)
            var ch = 0
            while ch + 16 <= c {
                depthwiseRow(SIMD16<Float>.self, rows, geometry, ch, weights, bias, output, quantizer)
                ch += 16
            }
            if ch < c {
                depthwiseRow(SIMD8<Float>.self, rows, geometry, ch, weights, bias, output, quantizer)
            }
        }
    }

    /// What every channel block of one output row shares.
    struct RowGeometry {
        var width: Int
        var channels: Int
        var stride: Int
        var padLeft: Int
        var outWidth: Int
        /// Output columns whose three taps are all inside the row.
        var firstInterior: Int
        var lastInterior: Int
        /// 0 for a ReLU, -infinity without.
        var floor: Float
        var outputBase: Int
    }

    /// One output row of one channel block `ch` of width `V`. Offsets are computed with wrapping
    /// arithmetic: they index tensors that exist, and the overflow checks were a fifth of the loop.
    @inline(__always)
    static func depthwiseRow<V: DepthwiseLanes>(_: V.Type,
                                                _ rows: (UnsafePointer<Float>?, UnsafePointer<Float>?, UnsafePointer<Float>?),
                                                _ g: RowGeometry, _ ch: Int,
                                                _ weights: UnsafePointer<Float>, _ bias: UnsafePointer<Float>,
                                                _ output: UnsafeMutableRawPointer, _ q: Quantizer?) {
        let c = g.channels, stride = g.stride, width = g.width
        let k0 = V.at(weights + ch), k1 = V.at(weights + (c &+ ch)), k2 = V.at(weights + (2 &* c &+ ch))
        let k3 = V.at(weights + (3 &* c &+ ch)), k4 = V.at(weights + (4 &* c &+ ch)), k5 = V.at(weights + (5 &* c &+ ch))
        let k6 = V.at(weights + (6 &* c &+ ch)), k7 = V.at(weights + (7 &* c &+ ch)), k8 = V.at(weights + (8 &* c &+ ch))
        let b = V.at(bias + ch)
        let floor = V(repeating: g.floor)
        let out = g.outputBase &+ ch
        @inline(__always)
        func put(_ v: V, _ ox: Int) {
            v.orAbove(floor).store(output, out &+ ox &* c, q)
        }
        // Where a tap may fall outside the input: the sum of the taps inside, row by row, as the
        // AVX2 set's edge sums are.
        @inline(__always)
        func edge(_ ox: Int) -> V {
            let ix0 = ox &* stride &- g.padLeft
            @inline(__always)
            func taps(_ row: UnsafePointer<Float>?, _ ka: V, _ kb: V, _ kc: V) -> V {
                guard let row else { return .zero }
                var sum = V.zero
                if ix0 >= 0 && ix0 < width { sum = sum.multiplyAdd(V.at(row + (ix0 &* c &+ ch)), ka) }
                if ix0 + 1 >= 0 && ix0 + 1 < width { sum = sum.multiplyAdd(V.at(row + ((ix0 &+ 1) &* c &+ ch)), kb) }
                if ix0 + 2 >= 0 && ix0 + 2 < width { sum = sum.multiplyAdd(V.at(row + ((ix0 &+ 2) &* c &+ ch)), kc) }
                return sum
            }
            return b.plus(taps(rows.0, k0, k1, k2)).plus(taps(rows.1, k3, k4, k5)).plus(taps(rows.2, k6, k7, k8))
        }
        var ox = 0
        while ox < min(g.firstInterior, g.outWidth) {
            put(edge(ox), ox)
            ox += 1
        }
        if g.lastInterior >= g.firstInterior {
            if let r0 = rows.0, let r1 = rows.1, let r2 = rows.2 {
                // One partial sum per row (three chains of three), as the AVX2 set's interior is.
                @inline(__always)
                func interior(_ a0: V, _ a1: V, _ a2: V, _ m0: V, _ m1: V, _ m2: V, _ z0: V, _ z1: V, _ z2: V) -> V {
                    var s0 = b.multiplyAdd(a0, k0)
                    var s1 = m0.times(k3)
                    var s2 = z0.times(k6)
                    s0 = s0.multiplyAdd(a1, k1); s1 = s1.multiplyAdd(m1, k4); s2 = s2.multiplyAdd(z1, k7)
                    s0 = s0.multiplyAdd(a2, k2); s1 = s1.multiplyAdd(m2, k5); s2 = s2.multiplyAdd(z2, k8)
                    return s0.plus(s1).plus(s2)
                }
                let c2 = 2 &* c, c3 = 3 &* c
                if stride == 1 {
                    // Two outputs per step: columns x...x+3 of each row, each loaded once.
                    while ox < g.lastInterior {
                        let ix = (ox &- g.padLeft) &* c &+ ch
                        let a0 = V.at(r0 + ix), a1 = V.at(r0 + (ix &+ c)), a2 = V.at(r0 + (ix &+ c2)), a3 = V.at(r0 + (ix &+ c3))
                        let m0 = V.at(r1 + ix), m1 = V.at(r1 + (ix &+ c)), m2 = V.at(r1 + (ix &+ c2)), m3 = V.at(r1 + (ix &+ c3))
                        let z0 = V.at(r2 + ix), z1 = V.at(r2 + (ix &+ c)), z2 = V.at(r2 + (ix &+ c2)), z3 = V.at(r2 + (ix &+ c3))
                        put(interior(a0, a1, a2, m0, m1, m2, z0, z1, z2), ox)
                        put(interior(a1, a2, a3, m1, m2, m3, z1, z2, z3), ox &+ 1)
                        ox &+= 2
                    }
                }
                while ox <= g.lastInterior {
                    let ix = (ox &* stride &- g.padLeft) &* c &+ ch
                    put(interior(V.at(r0 + ix), V.at(r0 + (ix &+ c)), V.at(r0 + (ix &+ c2)),
                                 V.at(r1 + ix), V.at(r1 + (ix &+ c)), V.at(r1 + (ix &+ c2)),
                                 V.at(r2 + ix), V.at(r2 + (ix &+ c)), V.at(r2 + (ix &+ c2))), ox)
                    ox &+= 1
                }
            } else {
                while ox <= g.lastInterior {
                    put(edge(ox), ox)
                    ox += 1
                }
            }
        }
        while ox < g.outWidth {
            put(edge(ox), ox)
            ox += 1
        }
    }
}

extension SIMD16: AVX512Kernels.DepthwiseLanes where Scalar == Float {
    @inline(__always)
    static func at(_ p: UnsafePointer<Float>) -> SIMD16<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Float>.self)
    }

    @inline(__always)
    func multiplyAdd(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> { _mm512_fmadd_ps(a, b, self) }

    @inline(__always)
    func plus(_ a: SIMD16<Float>) -> SIMD16<Float> { _mm512_add_ps(self, a) }

    @inline(__always)
    func times(_ a: SIMD16<Float>) -> SIMD16<Float> { _mm512_mul_ps(self, a) }

    @inline(__always)
    func orAbove(_ floor: SIMD16<Float>) -> SIMD16<Float> { _mm512_max_ps(floor, self) }

    @inline(__always)
    func store(_ output: UnsafeMutableRawPointer, _ index: Int, _ q: AVX512Kernels.Quantizer?) {
        guard let q else {
            (output + 4 &* index).storeBytes(of: self, as: SIMD16<Float>.self)
            return
        }
        let scaled = _mm512_min_ps(_mm512_mul_ps(self, SIMD16(repeating: q.inverse)), SIMD16(repeating: AVX512Kernels.Quantizer.cap))
        let shifted = _mm512_add_epi32(_mm512_cvtps_epi32(scaled), _mm512_set1_epi32(q.zeroPoint))
        let bytes = _mm512_cvtusepi32_epi8(_mm512_max_epi32(shifted, _mm512_setzero_si512()))
        (output + index).storeBytes(of: bytes, as: __m128i.self)
    }
}

extension SIMD8: AVX512Kernels.DepthwiseLanes where Scalar == Float {
    @inline(__always)
    static func at(_ p: UnsafePointer<Float>) -> SIMD8<Float> { NetworkKernels.load8(p) }

    @inline(__always)
    func multiplyAdd(_ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float> { _mm256_fmadd_ps(a, b, self) }

    @inline(__always)
    func plus(_ a: SIMD8<Float>) -> SIMD8<Float> { _mm256_add_ps(self, a) }

    @inline(__always)
    func times(_ a: SIMD8<Float>) -> SIMD8<Float> { _mm256_mul_ps(self, a) }

    @inline(__always)
    func orAbove(_ floor: SIMD8<Float>) -> SIMD8<Float> { _mm256_max_ps(floor, self) }

    @inline(__always)
    func store(_ output: UnsafeMutableRawPointer, _ index: Int, _ q: AVX512Kernels.Quantizer?) {
        guard let q else {
            (output + 4 &* index).storeBytes(of: self, as: SIMD8<Float>.self)
            return
        }
        let scaled = _mm256_min_ps(_mm256_mul_ps(self, SIMD8(repeating: q.inverse)), SIMD8(repeating: AVX512Kernels.Quantizer.cap))
        let shifted = _mm256_add_epi32(_mm256_cvtps_epi32(scaled), _mm256_set1_epi32(q.zeroPoint))
        let bytes = _mm256_cvtusepi32_epi8(_mm256_max_epi32(shifted, _mm256_setzero_si256()))
        (output + index).storeBytes(of: unsafeBitCast(bytes, to: SIMD2<UInt64>.self)[0], as: UInt64.self)
    }
}
