/// The SIMD kernels the convolutional network runs on. Tensors are NHWC Float buffers whose channel
/// count is padded to a multiple of 8 (`stride`), the padding channels held at zero, so every kernel
/// works in whole `SIMD8<Float>` vectors; only the network's 3-channel input is unpadded.
///
/// Kernels are concrete and non-generic, load unaligned, and keep their accumulators in locals so
/// the optimiser holds them in registers (measure in release builds only).
///
/// Every kernel is `@inlinable`: FaceAnalysis inlines them for the baseline x86-64 target, and the
/// CNNKernelsAVX2 module inlines the same source compiled for AVX2 + FMA, which FaceAnalysis
/// picks at run time when the processor has them. One source, two instruction sets. They are also
/// `@inline(__always)`: a specialised copy emitted out of line would carry the same symbol in both
/// modules, and the linker would keep one of them for both callers.
public enum NetworkKernels {
    /// How a kernel computes `acc + a * b`: fused (one rounding, one instruction) where the target
    /// has FMA, a multiply and an add where it does not (`fma` without the instruction is a libm call
    /// per lane). Swift never contracts `acc + a * b` into an FMA by itself, so a kernel that wants
    /// the instruction has to ask for it; the caller picks, and the kernel is specialised for it.
    public protocol MultiplyAdd {
        static func madd(_ acc: SIMD8<Float>, _ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float>
    }

    /// `acc + a * b` rounded once: `vfmadd231ps` on AVX2 + FMA.
    public enum FusedMultiplyAdd: MultiplyAdd {
        @inlinable @inline(__always)
        public static func madd(_ acc: SIMD8<Float>, _ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float> {
            acc.addingProduct(a, b)
        }
    }

    /// `acc + a * b` as a multiply and an add: the baseline target's kernels.
    public enum SeparateMultiplyAdd: MultiplyAdd {
        @inlinable @inline(__always)
        public static func madd(_ acc: SIMD8<Float>, _ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float> {
            acc + a * b
        }
    }

    /// Output pixels a general convolution computes per step; its `patch` scratch holds this many
    /// patches.
    public static let convolutionPixels = 4

    @inlinable @inline(__always)
    public static func load8(_ p: UnsafePointer<Float>) -> SIMD8<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
    }

    /// max(v, 0) lane by lane, as a compare and a blend (the standard library's `pointwiseMax` is a
    /// lane loop here).
    @inlinable @inline(__always)
    public static func relu8(_ v: SIMD8<Float>) -> SIMD8<Float> {
        v.replacing(with: 0, where: v .< 0)
    }

    /// The larger of each lane pair (inputs are never NaN here).
    @inlinable @inline(__always)
    public static func max8(_ a: SIMD8<Float>, _ b: SIMD8<Float>) -> SIMD8<Float> {
        a.replacing(with: b, where: a .< b)
    }

    @inlinable @inline(__always)
    public static func store8(_ v: SIMD8<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD8<Float>.self)
    }

    /// What a convolution does to its sums before storing them: bias (already in the accumulator),
    /// then an optional ReLU, an optional residual add (a tensor with `residualStride` channels, of
    /// which the first `residualChannels` are real; the rest count as zero, which is how a
    /// channel-padded skip connection adds), and an optional ReLU after the add.
    public struct Epilogue {
        public var reluBeforeAdd: Bool
        public var residual: UnsafePointer<Float>?
        public var residualStride: Int
        public var reluAfterAdd: Bool

        @inlinable
        public init(reluBeforeAdd: Bool, residual: UnsafePointer<Float>?, residualStride: Int, reluAfterAdd: Bool) {
            self.reluBeforeAdd = reluBeforeAdd
            self.residual = residual
            self.residualStride = residualStride
            self.reluAfterAdd = reluAfterAdd
        }


        @inlinable @inline(__always)
        public func apply(_ v: SIMD8<Float>, pixel: Int, channel: Int) -> SIMD8<Float> {
            var v = v
            if reluBeforeAdd { v = relu8(v) }
            if let residual, channel < residualStride {
                v += NetworkKernels.load8(residual + pixel * residualStride + channel)
            }
            if reluAfterAdd { v = relu8(v) }
            return v
        }
    }

    /// 1x1 convolution: `output[p][o] = bias[o] + sum_i input[p][i] * weights[o-block][i][o % 16]`.
    /// `weights` is packed in blocks of 16 output channels (the last block may hold 8): for block b,
    /// `inStride` rows of 16 (or 8) values. Four pixels by sixteen channels per step.
    @inlinable @inline(__always)
    public static func pointwise<M: MultiplyAdd>(input: UnsafePointer<Float>, inStride: Int, pixels: Int,
                          weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                          output: UnsafeMutablePointer<Float>, outStride: Int, epilogue: Epilogue, _: M.Type) {
        var o = 0
        while o + 16 <= outStride {
            let w = weights + o * inStride
            let b0 = load8(bias + o), b1 = load8(bias + o + 8)
            var p = 0
            while p + 4 <= pixels {
                var a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1
                let x0 = input + p * inStride
                let x1 = x0 + inStride, x2 = x1 + inStride, x3 = x2 + inStride
                var wi = w
                for i in 0..<inStride {
                    let w0 = load8(wi), w1 = load8(wi + 8)
                    let v0 = SIMD8<Float>(repeating: x0[i]), v1 = SIMD8<Float>(repeating: x1[i])
                    let v2 = SIMD8<Float>(repeating: x2[i]), v3 = SIMD8<Float>(repeating: x3[i])
                    a00 = M.madd(a00, v0, w0); a01 = M.madd(a01, v0, w1)
                    a10 = M.madd(a10, v1, w0); a11 = M.madd(a11, v1, w1)
                    a20 = M.madd(a20, v2, w0); a21 = M.madd(a21, v2, w1)
                    a30 = M.madd(a30, v3, w0); a31 = M.madd(a31, v3, w1)
                    wi += 16
                }
                let y = output + p * outStride + o
                store8(epilogue.apply(a00, pixel: p, channel: o), y)
                store8(epilogue.apply(a01, pixel: p, channel: o + 8), y + 8)
                store8(epilogue.apply(a10, pixel: p + 1, channel: o), y + outStride)
                store8(epilogue.apply(a11, pixel: p + 1, channel: o + 8), y + outStride + 8)
                store8(epilogue.apply(a20, pixel: p + 2, channel: o), y + 2 * outStride)
                store8(epilogue.apply(a21, pixel: p + 2, channel: o + 8), y + 2 * outStride + 8)
                store8(epilogue.apply(a30, pixel: p + 3, channel: o), y + 3 * outStride)
                store8(epilogue.apply(a31, pixel: p + 3, channel: o + 8), y + 3 * outStride + 8)
                p += 4
            }
            while p < pixels {
                var a0 = b0, a1 = b1
                let x = input + p * inStride
                var wi = w
                for i in 0..<inStride {
                    let v = SIMD8<Float>(repeating: x[i])
                    a0 = M.madd(a0, v, load8(wi)); a1 = M.madd(a1, v, load8(wi + 8))
                    wi += 16
                }
                let y = output + p * outStride + o
                store8(epilogue.apply(a0, pixel: p, channel: o), y)
                store8(epilogue.apply(a1, pixel: p, channel: o + 8), y + 8)
                p += 1
            }
            o += 16
        }
        if o < outStride {  // a last block of 8 channels
            let w = weights + o * inStride
            let b0 = load8(bias + o)
            var p = 0
            while p + 4 <= pixels {
                var a0 = b0, a1 = b0, a2 = b0, a3 = b0
                let x0 = input + p * inStride
                let x1 = x0 + inStride, x2 = x1 + inStride, x3 = x2 + inStride
                var wi = w
                for i in 0..<inStride {
                    let w0 = load8(wi)
                    a0 = M.madd(a0, SIMD8<Float>(repeating: x0[i]), w0)
                    a1 = M.madd(a1, SIMD8<Float>(repeating: x1[i]), w0)
                    a2 = M.madd(a2, SIMD8<Float>(repeating: x2[i]), w0)
                    a3 = M.madd(a3, SIMD8<Float>(repeating: x3[i]), w0)
                    wi += 8
                }
                let y = output + p * outStride + o
                store8(epilogue.apply(a0, pixel: p, channel: o), y)
                store8(epilogue.apply(a1, pixel: p + 1, channel: o), y + outStride)
                store8(epilogue.apply(a2, pixel: p + 2, channel: o), y + 2 * outStride)
                store8(epilogue.apply(a3, pixel: p + 3, channel: o), y + 3 * outStride)
                p += 4
            }
            while p < pixels {
                var a0 = b0
                let x = input + p * inStride
                var wi = w
                for i in 0..<inStride {
                    a0 = M.madd(a0, SIMD8<Float>(repeating: x[i]), load8(wi))
                    wi += 8
                }
                store8(epilogue.apply(a0, pixel: p, channel: o), output + p * outStride + o)
                p += 1
            }
        }
    }

    /// 3x3 depthwise convolution with TensorFlow's SAME padding: stride 1 pads one pixel on every
    /// side; stride 2 on an even size pads only the bottom row and right column. `weights` is
    /// [9][stride] (tap-major), `bias` [stride].
    @inlinable @inline(__always)
    public static func depthwise3x3<M: MultiplyAdd>(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                             stride: Int, padTop: Int, padLeft: Int,
                             weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                             output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, relu: Bool, _: M.Type) {
        depthwise3x3(input: input, height: height, width: width, channels: channels, stride: stride, padTop: padTop,
                     padLeft: padLeft, weights: weights, bias: bias, output: UnsafeMutableRawPointer(output),
                     outHeight: outHeight, outWidth: outWidth, relu: relu, M.self, FloatStore.self, quantization: nil)
    }

    /// Where a depthwise step puts its results: Floats, or (for an int8 1x1 convolution that is
    /// its only reader) the quantised activations that convolution reads, so neither the Floats
    /// nor a pass that quantises them exist. `index` counts values, not bytes.
    public protocol DepthwiseStore {
        static func store(_ v: SIMD8<Float>, _ output: UnsafeMutableRawPointer, _ index: Int, _ q: Quantization?)
    }

    /// Floats, as every other step writes them.
    public enum FloatStore: DepthwiseStore {
        @inlinable @inline(__always)
        public static func store(_ v: SIMD8<Float>, _ output: UnsafeMutableRawPointer, _ index: Int, _ q: Quantization?) {
            (output + 4 * index).storeBytes(of: v, as: SIMD8<Float>.self)
        }
    }

    /// `depthwise3x3`, storing each output vector through `S` (with `quantization` for a quantising store).
    @inlinable @inline(__always)
    public static func depthwise3x3<M: MultiplyAdd, S: DepthwiseStore>(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                             stride: Int, padTop: Int, padLeft: Int,
                             weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                             output: UnsafeMutableRawPointer, outHeight: Int, outWidth: Int, relu: Bool, _: M.Type, _: S.Type,
                             quantization: Quantization?) {
        let c = channels
        for oy in 0..<outHeight {
            let iy0 = oy * stride - padTop
            // The three input rows, nil where they fall in the padding.
            let r0: UnsafePointer<Float>? = iy0 >= 0 && iy0 < height ? input + iy0 * width * c : nil
            let r1: UnsafePointer<Float>? = iy0 + 1 >= 0 && iy0 + 1 < height ? input + (iy0 + 1) * width * c : nil
            let r2: UnsafePointer<Float>? = iy0 + 2 >= 0 && iy0 + 2 < height ? input + (iy0 + 2) * width * c : nil
            let yRow = oy * outWidth * c
            // Output columns whose three taps are all inside the row.
            let firstInterior = padLeft > 0 ? 1 : 0
            var lastInterior = outWidth - 1
            while lastInterior >= firstInterior && lastInterior * stride - padLeft + 2 >= width { lastInterior -= 1 }
            var ch = 0
            while ch < c {
                let k0 = load8(weights + ch), k1 = load8(weights + c + ch), k2 = load8(weights + 2 * c + ch)
                let k3 = load8(weights + 3 * c + ch), k4 = load8(weights + 4 * c + ch), k5 = load8(weights + 5 * c + ch)
                let k6 = load8(weights + 6 * c + ch), k7 = load8(weights + 7 * c + ch), k8 = load8(weights + 8 * c + ch)
                let b = load8(bias + ch)
                @inline(__always)
                func edge(_ ox: Int) -> SIMD8<Float> {
                    let ix0 = ox * stride - padLeft
                    @inline(__always)
                    func taps(_ row: UnsafePointer<Float>?, _ ka: SIMD8<Float>, _ kb: SIMD8<Float>, _ kc: SIMD8<Float>) -> SIMD8<Float> {
                        guard let row else { return .zero }
                        var sum = SIMD8<Float>.zero
                        if ix0 >= 0 && ix0 < width { sum = M.madd(sum, load8(row + ix0 * c + ch), ka) }
                        if ix0 + 1 >= 0 && ix0 + 1 < width { sum = M.madd(sum, load8(row + (ix0 + 1) * c + ch), kb) }
                        if ix0 + 2 >= 0 && ix0 + 2 < width { sum = M.madd(sum, load8(row + (ix0 + 2) * c + ch), kc) }
                        return sum
                    }
                    return b + taps(r0, k0, k1, k2) + taps(r1, k3, k4, k5) + taps(r2, k6, k7, k8)
                }
                var ox = 0
                while ox < min(firstInterior, outWidth) {
                    let v = edge(ox)
                    S.store(relu ? relu8(v) : v, output, yRow + ox * c + ch, quantization)
                    ox += 1
                }
                if lastInterior >= firstInterior {
                    if let r0, let r1, let r2 {
                        while ox <= lastInterior {
                            let ix = (ox * stride - padLeft) * c + ch
                            // One partial sum per row: three chains of three instead of one of nine.
                            var s0 = M.madd(b, load8(r0 + ix), k0)
                            var s1 = load8(r1 + ix) * k3
                            var s2 = load8(r2 + ix) * k6
                            s0 = M.madd(s0, load8(r0 + ix + c), k1); s1 = M.madd(s1, load8(r1 + ix + c), k4)
                            s2 = M.madd(s2, load8(r2 + ix + c), k7)
                            s0 = M.madd(s0, load8(r0 + ix + 2 * c), k2); s1 = M.madd(s1, load8(r1 + ix + 2 * c), k5)
                            s2 = M.madd(s2, load8(r2 + ix + 2 * c), k8)
                            let acc = s0 + s1 + s2
                            S.store(relu ? relu8(acc) : acc, output, yRow + ox * c + ch, quantization)
                            ox += 1
                        }
                    } else {
                        while ox <= lastInterior {
                            let v = edge(ox)
                            S.store(relu ? relu8(v) : v, output, yRow + ox * c + ch, quantization)
                            ox += 1
                        }
                    }
                }
                while ox < outWidth {
                    let v = edge(ox)
                    S.store(relu ? relu8(v) : v, output, yRow + ox * c + ch, quantization)
                    ox += 1
                }
                ch += 8
            }
        }
    }
}
