/// The kernels a network step calls, as one set per instruction-set target. `PortableKernels`
/// runs anywhere x86-64 (or any other Swift target) does; CNNKernelsAVX2's set is the same source
/// compiled for AVX2 + FMA. The network runner is generic over the set, so each step calls the
/// chosen set's kernels directly, with no per-call dispatch.
public protocol NetworkKernelSet {
    static func pointwise(input: UnsafePointer<Float>, inStride: Int, pixels: Int,
                          weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                          output: UnsafeMutablePointer<Float>, outStride: Int, epilogue: NetworkKernels.Epilogue)
    static func depthwise3x3(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                             stride: Int, padTop: Int, padLeft: Int,
                             weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                             output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, relu: Bool)
    static func convolution(input: UnsafePointer<Float>, height: Int, width: Int, inChannels: Int,
                            kernel: Int, stride: Int, padTop: Int, padLeft: Int,
                            weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                            output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, outStride: Int,
                            relu: Bool, patch: UnsafeMutablePointer<Float>)
    static func maxPool2x2(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                           output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int)
    static func resizeBilinear(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                               output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int)
    static func add(_ a: UnsafePointer<Float>, aStride: Int, _ b: UnsafePointer<Float>, bStride: Int, pixels: Int,
                    output: UnsafeMutablePointer<Float>, relu: Bool)

    /// The weight and activation layout this set's int8 kernels read.
    static var int8Layout: NetworkKernels.Int8Layout { get }
    /// Quantises `count` floats into `output` as this set's activations (`int8Layout`).
    static func quantize(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization,
                         output: UnsafeMutableRawPointer)
    /// `depthwise3x3` writing its outputs quantised with `quantization` as this set's activations
    /// (`int8Layout`) into `output`, for the int8 1x1 convolution that is their only reader.
    static func depthwise3x3Quantized(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                      stride: Int, padTop: Int, padLeft: Int,
                                      weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                      output: UnsafeMutableRawPointer, outHeight: Int, outWidth: Int, relu: Bool,
                                      quantization: NetworkKernels.Quantization)
    /// The int8 1x1 convolution (see `NetworkKernels+Int8.swift`): `input` is `pixels` rows of
    /// `inStride` quantised activations, `weights` packed in `int8Layout`; sums start at
    /// `sumBase`, become `Float(sum) * multipliers + bias`, then `epilogue`.
    static func pointwiseInt8(input: UnsafeRawPointer, inStride: Int, pixels: Int, weights: UnsafeRawPointer,
                              sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                              bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                              epilogue: NetworkKernels.Epilogue)
    /// Quantises `count` floats (a multiple of 8) to Int16 in `0...levels`
    /// (`NetworkKernels.quantizedLevels`), for `pointwiseInt16`.
    static func quantizeInt16(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization, levels: Int32,
                              output: UnsafeMutablePointer<Int16>)
    /// The 16-bit integer 1x1 convolution (see `NetworkKernels+Int16.swift`): `input` is `pixels`
    /// rows of `inStride` (even) Int16 activations, `weights` Int16 in the `pairs` layout; sums
    /// start at `sumBase`, become `Float(sum) * multipliers + bias`, then `epilogue`. The caller
    /// bounds the weights so that no sum overflows Int32.
    static func pointwiseInt16(input: UnsafePointer<Int16>, inStride: Int, pixels: Int, weights: UnsafePointer<Int16>,
                               sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                               bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                               epilogue: NetworkKernels.Epilogue)
}

/// The kernels compiled for the package's baseline target.
public enum PortableKernels: NetworkKernelSet {
    public static func pointwise(input: UnsafePointer<Float>, inStride: Int, pixels: Int,
                                 weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                 output: UnsafeMutablePointer<Float>, outStride: Int, epilogue: NetworkKernels.Epilogue) {
        NetworkKernels.pointwise(input: input, inStride: inStride, pixels: pixels, weights: weights, bias: bias,
                                 output: output, outStride: outStride, epilogue: epilogue, NetworkKernels.SeparateMultiplyAdd.self)
    }

    public static func depthwise3x3(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                    stride: Int, padTop: Int, padLeft: Int,
                                    weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                    output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, relu: Bool) {
        NetworkKernels.depthwise3x3(input: input, height: height, width: width, channels: channels, stride: stride,
                                    padTop: padTop, padLeft: padLeft, weights: weights, bias: bias, output: output,
                                    outHeight: outHeight, outWidth: outWidth, relu: relu, NetworkKernels.SeparateMultiplyAdd.self)
    }

    public static func convolution(input: UnsafePointer<Float>, height: Int, width: Int, inChannels: Int,
                                   kernel: Int, stride: Int, padTop: Int, padLeft: Int,
                                   weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                   output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, outStride: Int,
                                   relu: Bool, patch: UnsafeMutablePointer<Float>) {
        NetworkKernels.convolution(input: input, height: height, width: width, inChannels: inChannels, kernel: kernel,
                                   stride: stride, padTop: padTop, padLeft: padLeft, weights: weights, bias: bias,
                                   output: output, outHeight: outHeight, outWidth: outWidth, outStride: outStride,
                                   relu: relu, patch: patch, NetworkKernels.SeparateMultiplyAdd.self)
    }

    public static func maxPool2x2(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                  output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        NetworkKernels.maxPool2x2(input: input, height: height, width: width, channels: channels, output: output,
                                  outHeight: outHeight, outWidth: outWidth)
    }

    public static func resizeBilinear(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                      output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        NetworkKernels.resizeBilinear(input: input, height: height, width: width, channels: channels, output: output,
                                      outHeight: outHeight, outWidth: outWidth)
    }

    public static func add(_ a: UnsafePointer<Float>, aStride: Int, _ b: UnsafePointer<Float>, bStride: Int, pixels: Int,
                           output: UnsafeMutablePointer<Float>, relu: Bool) {
        NetworkKernels.add(a, aStride: aStride, b, bStride: bStride, pixels: pixels, output: output, relu: relu)
    }

    public static let int8Layout = NetworkKernels.Int8Layout.pairs

    public static func depthwise3x3Quantized(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                             stride: Int, padTop: Int, padLeft: Int,
                                             weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                             output: UnsafeMutableRawPointer, outHeight: Int, outWidth: Int, relu: Bool,
                                             quantization: NetworkKernels.Quantization) {
        NetworkKernels.depthwise3x3(input: input, height: height, width: width, channels: channels, stride: stride,
                                    padTop: padTop, padLeft: padLeft, weights: weights, bias: bias, output: output,
                                    outHeight: outHeight, outWidth: outWidth, relu: relu, NetworkKernels.SeparateMultiplyAdd.self,
                                    NetworkKernels.Int16Store.self, quantization: quantization)
    }

    public static func quantize(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization,
                                output: UnsafeMutableRawPointer) {
        NetworkKernels.quantizePairs(input, count: count, q, output: output.assumingMemoryBound(to: Int16.self))
    }

    public static func pointwiseInt8(input: UnsafeRawPointer, inStride: Int, pixels: Int, weights: UnsafeRawPointer,
                                     sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                                     bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                                     epilogue: NetworkKernels.Epilogue) {
        NetworkKernels.pointwiseInt8Pairs(input: input.assumingMemoryBound(to: Int16.self), inStride: inStride, pixels: pixels,
                                          weights: weights.assumingMemoryBound(to: Int16.self), sumBase: sumBase,
                                          multipliers: multipliers, bias: bias, output: output, outStride: outStride,
                                          epilogue: epilogue)
    }

    public static func quantizeInt16(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization, levels: Int32,
                                     output: UnsafeMutablePointer<Int16>) {
        NetworkKernels.quantizeInt16Lanes(input, count: count, q, levels: levels, output: output)
    }

    public static func pointwiseInt16(input: UnsafePointer<Int16>, inStride: Int, pixels: Int, weights: UnsafePointer<Int16>,
                                      sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                                      bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                                      epilogue: NetworkKernels.Epilogue) {
        NetworkKernels.pointwiseInt8Pairs(input: input, inStride: inStride, pixels: pixels, weights: weights, sumBase: sumBase,
                                          multipliers: multipliers, bias: bias, output: output, outStride: outStride,
                                          epilogue: epilogue)
    }
}
