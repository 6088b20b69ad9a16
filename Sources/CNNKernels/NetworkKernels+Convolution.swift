extension NetworkKernels {
    /// A general KxK convolution of a narrow input (the network's first layer: 3 channels), with
    /// `weights` packed as [out-block of 8][k*k*inChannels][8]. SAME padding with the given top/left
    /// pad. `convolutionPixels` output pixels per step, two blocks of 8 channels at a time, so eight
    /// independent sums are in flight. Where a step's patches lie wholly inside the image they are
    /// read in place (a kernel row of an NHWC image is contiguous); elsewhere they are gathered into
    /// `patch` (room for `convolutionPixels` patches) with zeros for the padding.
    @inlinable @inline(__always)
    public static func convolution<M: MultiplyAdd>(input: UnsafePointer<Float>, height: Int, width: Int, inChannels: Int,
                            kernel: Int, stride: Int, padTop: Int, padLeft: Int,
                            weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                            output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, outStride: Int,
                            relu: Bool, patch: UnsafeMutablePointer<Float>, _: M.Type) {
        convolutionSteps(input: input, height: height, width: width, inChannels: inChannels, kernel: kernel,
                         stride: stride, padTop: padTop, padLeft: padLeft, outHeight: outHeight, outWidth: outWidth,
                         patch: patch) { step in
            convolutionChannels(step, from: 0, weights: weights, bias: bias, output: output, outStride: outStride,
                                relu: relu, M.self)
        }
    }

    /// One step of a general convolution: `pixels` (1...`convolutionPixels`) outputs of a row, whose
    /// patches start at `source`, `pixelStep` apart, each `kernel` rows of `rowLength` values
    /// `rowStep` apart; output pixel `first` of the tensor.
    public struct ConvolutionStep {
        public var source: UnsafePointer<Float>
        public var rowStep: Int
        public var pixelStep: Int
        public var pixels: Int
        public var kernel: Int
        public var rowLength: Int
        public var first: Int

        @inlinable
        init(source: UnsafePointer<Float>, rowStep: Int, pixelStep: Int, pixels: Int, kernel: Int, rowLength: Int, first: Int) {
            self.source = source
            self.rowStep = rowStep
            self.pixelStep = pixelStep
            self.pixels = pixels
            self.kernel = kernel
            self.rowLength = rowLength
            self.first = first
        }

        /// Values per patch, the stride between output channels' weight rows.
        @inlinable
        public var patchLength: Int { kernel * rowLength }
    }

    /// Walks a general convolution's output in steps of `convolutionPixels` pixels, finding each
    /// step's patches: read in place where they lie wholly inside the image (a kernel row of an
    /// NHWC image is contiguous), else gathered into `patch` with zeros for the padding. Every
    /// kernel set's convolution computes its channels through this.
    @inlinable @inline(__always)
    public static func convolutionSteps(input: UnsafePointer<Float>, height: Int, width: Int, inChannels: Int,
                                        kernel: Int, stride: Int, padTop: Int, padLeft: Int, outHeight: Int, outWidth: Int,
                                        patch: UnsafeMutablePointer<Float>, _ body: (ConvolutionStep) -> Void) {
        let rowLength = kernel * inChannels
        let patchLength = kernel * rowLength
        let imageRow = width * inChannels
        for oy in 0..<outHeight {
            let iy = oy * stride - padTop
            let rowsInside = iy >= 0 && iy + kernel <= height
            var ox = 0
            while ox < outWidth {
                let n = min(convolutionPixels, outWidth - ox)
                let ix = ox * stride - padLeft
                // Where each of the four patches starts and how far apart its kernel rows are.
                let source: UnsafePointer<Float>, rowStep: Int, pixelStep: Int
                if rowsInside && ix >= 0 && (ox + convolutionPixels - 1) * stride - padLeft + kernel <= width {
                    source = input + iy * imageRow + ix * inChannels
                    rowStep = imageRow
                    pixelStep = stride * inChannels
                } else {
                    for j in 0..<convolutionPixels {
                        var k = j * patchLength
                        for ky in 0..<kernel {
                            let y = iy + ky
                            for kx in 0..<kernel {
                                let x = (ox + j) * stride - padLeft + kx
                                let inside = j < n && y >= 0 && y < height && x >= 0 && x < width
                                for ci in 0..<inChannels {
                                    patch[k] = inside ? input[(y * width + x) * inChannels + ci] : 0
                                    k += 1
                                }
                            }
                        }
                    }
                    source = UnsafePointer(patch)
                    rowStep = rowLength
                    pixelStep = patchLength
                }
                body(ConvolutionStep(source: source, rowStep: rowStep, pixelStep: pixelStep, pixels: n, kernel: kernel,
                                     rowLength: rowLength, first: oy * outWidth + ox))
                ox += n
            }
        }
    }

    /// Output channels `from...` of one convolution step, sixteen (two blocks of 8) at a time, then
    /// a last block of 8: bias, then each tap in kernel order, then an optional ReLU.
    @inlinable @inline(__always)
    public static func convolutionChannels<M: MultiplyAdd>(_ step: ConvolutionStep, from first: Int,
                                                           weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                                           output: UnsafeMutablePointer<Float>, outStride: Int,
                                                           relu: Bool, _: M.Type) {
        let kernel = step.kernel, rowLength = step.rowLength, rowStep = step.rowStep, n = step.pixels
        let patchLength = step.patchLength
        let x0 = step.source, x1 = x0 + step.pixelStep, x2 = x1 + step.pixelStep, x3 = x2 + step.pixelStep
        let y = output + step.first * outStride
        @inline(__always)
        func finish(_ v: SIMD8<Float>) -> SIMD8<Float> { relu ? relu8(v) : v }
        var o = first
        while o + 16 <= outStride {
            let b0 = load8(bias + o), b1 = load8(bias + o + 8)
            var a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1
            var w0 = weights + o * patchLength, w1 = w0 + 8 * patchLength
            for ky in 0..<kernel {
                let r = ky * rowStep
                for i in 0..<rowLength {
                    let k0 = load8(w0), k1 = load8(w1)
                    let v0 = SIMD8<Float>(repeating: x0[r + i]), v1 = SIMD8<Float>(repeating: x1[r + i])
                    let v2 = SIMD8<Float>(repeating: x2[r + i]), v3 = SIMD8<Float>(repeating: x3[r + i])
                    a00 = M.madd(a00, v0, k0); a01 = M.madd(a01, v0, k1)
                    a10 = M.madd(a10, v1, k0); a11 = M.madd(a11, v1, k1)
                    a20 = M.madd(a20, v2, k0); a21 = M.madd(a21, v2, k1)
                    a30 = M.madd(a30, v3, k0); a31 = M.madd(a31, v3, k1)
                    w0 += 8; w1 += 8
                }
            }
            store8(finish(a00), y + o); store8(finish(a01), y + o + 8)
            if n > 1 { store8(finish(a10), y + outStride + o); store8(finish(a11), y + outStride + o + 8) }
            if n > 2 { store8(finish(a20), y + 2 * outStride + o); store8(finish(a21), y + 2 * outStride + o + 8) }
            if n > 3 { store8(finish(a30), y + 3 * outStride + o); store8(finish(a31), y + 3 * outStride + o + 8) }
            o += 16
        }
        if o < outStride {  // a last block of 8 channels
            let b0 = load8(bias + o)
            var a0 = b0, a1 = b0, a2 = b0, a3 = b0
            var w0 = weights + o * patchLength
            for ky in 0..<kernel {
                let r = ky * rowStep
                for i in 0..<rowLength {
                    let k0 = load8(w0)
                    a0 = M.madd(a0, SIMD8<Float>(repeating: x0[r + i]), k0)
                    a1 = M.madd(a1, SIMD8<Float>(repeating: x1[r + i]), k0)
                    a2 = M.madd(a2, SIMD8<Float>(repeating: x2[r + i]), k0)
                    a3 = M.madd(a3, SIMD8<Float>(repeating: x3[r + i]), k0)
                    w0 += 8
                }
            }
            store8(finish(a0), y + o)
            if n > 1 { store8(finish(a1), y + outStride + o) }
            if n > 2 { store8(finish(a2), y + 2 * outStride + o) }
            if n > 3 { store8(finish(a3), y + 3 * outStride + o) }
        }
    }
}
