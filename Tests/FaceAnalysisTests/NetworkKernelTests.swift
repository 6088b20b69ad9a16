import CNNKernels
import FaceAnalysis
import CNNKernelsAVX2
import CNNKernelsAVX512
import Testing

/// The network's kernels against plain loops, on shapes BlazeFace never has (odd sizes, a last
/// block of 8 channels, rows that do not fill a step), for every kernel set this processor runs.
/// The parity tests cover BlazeFace's own shapes against TensorFlow Lite.
struct NetworkKernelTests {
    enum Set: String, CaseIterable {
        case portable, avx2, avx512
        var isSupported: Bool { self == .portable || (self == .avx2 ? AVX2Kernels.isSupported : AVX512Kernels.isSupported) }
    }
    static let sets = Set.allCases.filter(\.isSupported)

    /// Deterministic values in -1...1.
    static func values(_ count: Int, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in Float(generator.next() >> 40) / Float(1 << 24) * 2 - 1 }
    }

    static func expectClose(_ got: [Float], _ want: [Float], _ what: String) {
        #expect(got.count == want.count)
        let worst = zip(got, want).map { abs($0 - $1) }.max() ?? 0
        #expect(worst <= 1e-4, "\(what): largest difference \(worst)")
    }

    @Test("a general convolution matches plain loops, edges and short rows included", arguments: sets, [(1, 0, 0), (1, 2, 2), (2, 1, 1), (2, 2, 1)])
    func convolution(set: Set, geometry: (stride: Int, padTop: Int, padLeft: Int)) {
        // BlazeFace's first layer (5x5 over RGB, ReLU), and a 3x3 over one channel without ReLU.
        for (kernel, inChannels, relu) in [(5, 3, true), (3, 1, false)] {
            convolution(set: set, geometry: geometry, kernel: kernel, inChannels: inChannels, relu: relu)
        }
    }

    func convolution(set: Set, geometry: (stride: Int, padTop: Int, padLeft: Int), kernel: Int, inChannels: Int, relu: Bool) {
        let (height, width, outChannels) = (11, 29, 24)
        let (stride, padTop, padLeft) = geometry
        let outHeight = (height + stride - 1) / stride, outWidth = (width + stride - 1) / stride
        let input = Self.values(height * width * inChannels, seed: 1)
        let w = Self.values(outChannels * kernel * kernel * inChannels, seed: 2)   // [o][ky][kx][ci]
        let bias = Self.values(outChannels, seed: 3)
        var want = [Float](repeating: 0, count: outHeight * outWidth * outChannels)
        for oy in 0..<outHeight {
            for ox in 0..<outWidth {
                for o in 0..<outChannels {
                    var sum = bias[o]
                    for ky in 0..<kernel {
                        for kx in 0..<kernel {
                            let iy = oy * stride - padTop + ky, ix = ox * stride - padLeft + kx
                            guard iy >= 0, iy < height, ix >= 0, ix < width else { continue }
                            for ci in 0..<inChannels {
                                sum += input[(iy * width + ix) * inChannels + ci] * w[((o * kernel + ky) * kernel + kx) * inChannels + ci]
                            }
                        }
                    }
                    want[(oy * outWidth + ox) * outChannels + o] = relu ? max(sum, 0) : sum
                }
            }
        }
        // Packed as [out-block of 8][k*k*inChannels][8].
        let patchLength = kernel * kernel * inChannels
        var packed = [Float](repeating: 0, count: outChannels * patchLength)
        for o in 0..<outChannels {
            for i in 0..<patchLength { packed[((o / 8) * patchLength + i) * 8 + o % 8] = w[o * patchLength + i] }
        }
        var got = [Float](repeating: .nan, count: want.count)
        // NaN in the scratch: a gathered patch that skipped writing its zeros would show.
        var patch = [Float](repeating: .nan, count: NetworkKernels.convolutionPixels * patchLength)
        input.withUnsafeBufferPointer { x in
            packed.withUnsafeBufferPointer { pw in
                bias.withUnsafeBufferPointer { b in
                    got.withUnsafeMutableBufferPointer { y in
                        patch.withUnsafeMutableBufferPointer { p in
                            let call = set == .avx512 ? AVX512Kernels.convolution : set == .avx2 ? AVX2Kernels.convolution : PortableKernels.convolution
                            call(x.baseAddress!, height, width, inChannels, kernel, stride, padTop, padLeft,
                                 pw.baseAddress!, b.baseAddress!, y.baseAddress!, outHeight, outWidth, outChannels, relu, p.baseAddress!)
                        }
                    }
                }
            }
        }
        Self.expectClose(got, want, "\(set) \(kernel)x\(kernel)x\(inChannels) stride \(stride) pad \(padTop),\(padLeft)")
    }

    @Test("a 1x1 convolution with a narrower residual matches plain loops", arguments: sets)
    func pointwise(set: Set) {
        let (pixels, inStride, outStride, residualStride) = (7, 16, 24, 8)
        let input = Self.values(pixels * inStride, seed: 4)
        let w = Self.values(outStride * inStride, seed: 5)     // [o][i]
        let bias = Self.values(outStride, seed: 6)
        let residual = Self.values(pixels * residualStride, seed: 7)
        var want = [Float](repeating: 0, count: pixels * outStride)
        for p in 0..<pixels {
            for o in 0..<outStride {
                var sum = bias[o]
                for i in 0..<inStride { sum += input[p * inStride + i] * w[o * inStride + i] }
                sum = max(sum, 0)
                if o < residualStride { sum += residual[p * residualStride + o] }
                want[p * outStride + o] = max(sum, 0)
            }
        }
        // Packed in blocks of 16 output channels (the last block of 8): per block, inStride rows.
        var packed = [Float](repeating: 0, count: outStride * inStride)
        var o0 = 0
        while o0 < outStride {
            let block = min(16, outStride - o0)
            for i in 0..<inStride { for j in 0..<block { packed[o0 * inStride + i * block + j] = w[(o0 + j) * inStride + i] } }
            o0 += block
        }
        var got = [Float](repeating: .nan, count: want.count)
        input.withUnsafeBufferPointer { x in
            packed.withUnsafeBufferPointer { pw in
                bias.withUnsafeBufferPointer { b in
                    residual.withUnsafeBufferPointer { r in
                        got.withUnsafeMutableBufferPointer { y in
                            let epilogue = NetworkKernels.Epilogue(reluBeforeAdd: true, residual: r.baseAddress!, residualStride: residualStride, reluAfterAdd: true)
                            let call = set == .avx512 ? AVX512Kernels.pointwise : set == .avx2 ? AVX2Kernels.pointwise : PortableKernels.pointwise
                            call(x.baseAddress!, inStride, pixels, pw.baseAddress!, b.baseAddress!, y.baseAddress!, outStride, epilogue)
                        }
                    }
                }
            }
        }
        Self.expectClose(got, want, "\(set)")
    }

    @Test("a depthwise 3x3 convolution matches plain loops", arguments: sets, [(1, 1, 1), (2, 0, 0), (2, 1, 1)])
    func depthwise(set: Set, geometry: (stride: Int, padTop: Int, padLeft: Int)) {
        // One channel block and several (the blocks of a pixel share its rows).
        for channels in [8, 24] {
            depthwise(set: set, geometry: geometry, channels: channels)
        }
    }

    func depthwise(set: Set, geometry: (stride: Int, padTop: Int, padLeft: Int), channels: Int) {
        let (height, width) = (7, 11)
        let (stride, padTop, padLeft) = geometry
        let outHeight = (height + stride - 1) / stride, outWidth = (width + stride - 1) / stride
        let input = Self.values(height * width * channels, seed: 8)
        let taps = Self.values(9 * channels, seed: 9)           // [tap][channel]
        let bias = Self.values(channels, seed: 10)
        var want = [Float](repeating: 0, count: outHeight * outWidth * channels)
        for oy in 0..<outHeight {
            for ox in 0..<outWidth {
                for c in 0..<channels {
                    var sum = bias[c]
                    for ky in 0..<3 {
                        for kx in 0..<3 {
                            let iy = oy * stride - padTop + ky, ix = ox * stride - padLeft + kx
                            guard iy >= 0, iy < height, ix >= 0, ix < width else { continue }
                            sum += input[(iy * width + ix) * channels + c] * taps[(ky * 3 + kx) * channels + c]
                        }
                    }
                    want[(oy * outWidth + ox) * channels + c] = sum
                }
            }
        }
        var got = [Float](repeating: .nan, count: want.count)
        input.withUnsafeBufferPointer { x in
            taps.withUnsafeBufferPointer { t in
                bias.withUnsafeBufferPointer { b in
                    got.withUnsafeMutableBufferPointer { y in
                        let call = set == .avx512 ? AVX512Kernels.depthwise3x3 : set == .avx2 ? AVX2Kernels.depthwise3x3 : PortableKernels.depthwise3x3
                        call(x.baseAddress!, height, width, channels, stride, padTop, padLeft, t.baseAddress!, b.baseAddress!,
                             y.baseAddress!, outHeight, outWidth, false)
                    }
                }
            }
        }
        Self.expectClose(got, want, "\(set) \(channels) channels stride \(stride) pad \(padTop),\(padLeft)")
    }

    /// The AVX-512 depthwise kernel (sixteen channels wide, two outputs per step) computes each
    /// output as the AVX2 set's does, so the two give the same bits, as Floats and as quantised
    /// bytes: on rows longer than a step, with blocks of 16 and a last block of 8, at both strides.
    @Test("the AVX-512 depthwise kernel gives the AVX2 kernel's bits", .enabled(if: AVX2Kernels.isSupported && AVX512Kernels.isSupported, "needs a processor with AVX2 and AVX-512"), arguments: [(1, 1, 1), (2, 0, 0), (2, 1, 1)])
    func depthwiseAVX512MatchesAVX2(geometry: (stride: Int, padTop: Int, padLeft: Int)) {
        let (height, width) = (9, 37)
        let (stride, padTop, padLeft) = geometry
        let outHeight = (height + stride - 1) / stride, outWidth = (width + stride - 1) / stride
        for channels in [8, 16, 24, 48] {
            let input = Self.values(height * width * channels, seed: 11)
            let taps = Self.values(9 * channels, seed: 12), bias = Self.values(channels, seed: 13)
            // A narrow range, so outputs saturate at both ends (sums reach about +-4).
            let q = NetworkKernels.Quantization(minimum: -0.5, maximum: 0.8)
            for relu in [false, true] {
                func run<K: NetworkKernelSet>(_: K.Type) -> (floats: [Float], bytes: [UInt8]) {
                    var floats = [Float](repeating: .nan, count: outHeight * outWidth * channels)
                    var bytes = [UInt8](repeating: 0xAA, count: outHeight * outWidth * channels + 8)
                    input.withUnsafeBufferPointer { x in
                        taps.withUnsafeBufferPointer { t in
                            bias.withUnsafeBufferPointer { b in
                                floats.withUnsafeMutableBufferPointer { y in
                                    K.depthwise3x3(input: x.baseAddress!, height: height, width: width, channels: channels,
                                                   stride: stride, padTop: padTop, padLeft: padLeft, weights: t.baseAddress!,
                                                   bias: b.baseAddress!, output: y.baseAddress!, outHeight: outHeight,
                                                   outWidth: outWidth, relu: relu)
                                }
                                // Bytes are the AVX-512 set's activations (the AVX2 set writes Int16 pairs).
                                guard K.int8Layout == .quads else { return }
                                bytes.withUnsafeMutableBytes { y in
                                    K.depthwise3x3Quantized(input: x.baseAddress!, height: height, width: width, channels: channels,
                                                            stride: stride, padTop: padTop, padLeft: padLeft, weights: t.baseAddress!,
                                                            bias: b.baseAddress!, output: y.baseAddress!, outHeight: outHeight,
                                                            outWidth: outWidth, relu: relu, quantization: q)
                                }
                            }
                        }
                    }
                    return (floats, bytes)
                }
                let avx2 = run(AVX2Kernels.self), avx512 = run(AVX512Kernels.self)
                let what = "\(channels) channels, stride \(stride), pad \(padTop),\(padLeft), relu \(relu)"
                #expect(avx512.floats.map(\.bitPattern) == avx2.floats.map(\.bitPattern), "Floats differ: \(what)")
                // The reference: the AVX2 set's Floats through the shared Float quantisation (the
                // portable set's, written as Int16), then the 8 bytes of slack the store may touch.
                var pairs = [Int16](repeating: 0, count: avx2.floats.count)
                avx2.floats.withUnsafeBufferPointer { x in
                    pairs.withUnsafeMutableBytes { y in
                        PortableKernels.quantize(x.baseAddress!, count: x.count, q, output: y.baseAddress!)
                    }
                }
                let reference = pairs.map { UInt8($0) } + avx512.bytes.suffix(8)
                #expect(avx512.bytes == reference, "quantised bytes differ: \(what)")
            }
        }
    }

    /// The AVX-512 general convolution (32 channels per step in ZMM vectors) gives the AVX2 set's
    /// bits: BlazeFace's first layer shape, and 40 channels so the last 8 take the shared path.
    @Test("the AVX-512 general convolution gives the AVX2 kernel's bits", .enabled(if: AVX2Kernels.isSupported && AVX512Kernels.isSupported, "needs a processor with AVX2 and AVX-512"), arguments: [(1, 2, 2), (2, 1, 1), (2, 2, 1)])
    func convolutionAVX512MatchesAVX2(geometry: (stride: Int, padTop: Int, padLeft: Int)) {
        let (height, width, kernel, inChannels) = (13, 31, 5, 3)
        let (stride, padTop, padLeft) = geometry
        let outHeight = (height + stride - 1) / stride, outWidth = (width + stride - 1) / stride
        for outStride in [32, 40] {
            let input = Self.values(height * width * inChannels, seed: 14)
            let weights = Self.values(outStride * kernel * kernel * inChannels, seed: 15)
            let bias = Self.values(outStride, seed: 16)
            for relu in [false, true] {
                func run<K: NetworkKernelSet>(_: K.Type) -> [UInt32] {
                    var out = [Float](repeating: .nan, count: outHeight * outWidth * outStride)
                    var patch = [Float](repeating: 0, count: NetworkKernels.convolutionPixels * kernel * kernel * inChannels)
                    input.withUnsafeBufferPointer { x in
                        weights.withUnsafeBufferPointer { w in
                            bias.withUnsafeBufferPointer { b in
                                out.withUnsafeMutableBufferPointer { y in
                                    patch.withUnsafeMutableBufferPointer { p in
                                        K.convolution(input: x.baseAddress!, height: height, width: width, inChannels: inChannels,
                                                      kernel: kernel, stride: stride, padTop: padTop, padLeft: padLeft,
                                                      weights: w.baseAddress!, bias: b.baseAddress!, output: y.baseAddress!,
                                                      outHeight: outHeight, outWidth: outWidth, outStride: outStride,
                                                      relu: relu, patch: p.baseAddress!)
                                    }
                                }
                            }
                        }
                    }
                    return out.map(\.bitPattern)
                }
                #expect(run(AVX512Kernels.self) == run(AVX2Kernels.self),
                        "\(outStride) channels, stride \(stride), pad \(padTop),\(padLeft), relu \(relu)")
            }
        }
    }

    /// The AVX-512 max pool and bilinear resize give the AVX2 set's bits, with blocks of 16 and a
    /// last block of 8 channels, odd sizes (the pool's clamped last row and column) and both
    /// directions of resize.
    @Test("AVX-512 pooling and resizing give the AVX2 kernels' bits", .enabled(if: AVX2Kernels.isSupported && AVX512Kernels.isSupported, "needs a processor with AVX2 and AVX-512"), arguments: [8, 16, 24, 48])
    func movementAVX512MatchesAVX2(channels: Int) {
        let (height, width) = (7, 9)
        let input = Self.values(height * width * channels, seed: 17)
        func run<K: NetworkKernelSet>(_: K.Type, _ outHeight: Int, _ outWidth: Int, pool: Bool) -> [UInt32] {
            var out = [Float](repeating: .nan, count: outHeight * outWidth * channels)
            input.withUnsafeBufferPointer { x in
                out.withUnsafeMutableBufferPointer { y in
                    if pool {
                        K.maxPool2x2(input: x.baseAddress!, height: height, width: width, channels: channels,
                                     output: y.baseAddress!, outHeight: outHeight, outWidth: outWidth)
                    } else {
                        K.resizeBilinear(input: x.baseAddress!, height: height, width: width, channels: channels,
                                         output: y.baseAddress!, outHeight: outHeight, outWidth: outWidth)
                    }
                }
            }
            return out.map(\.bitPattern)
        }
        #expect(run(AVX512Kernels.self, 4, 5, pool: true) == run(AVX2Kernels.self, 4, 5, pool: true), "pool, \(channels) channels")
        for (outHeight, outWidth) in [(14, 18), (3, 5)] {
            #expect(run(AVX512Kernels.self, outHeight, outWidth, pool: false) == run(AVX2Kernels.self, outHeight, outWidth, pool: false),
                    "resize to \(outHeight)x\(outWidth), \(channels) channels")
        }
    }
}
