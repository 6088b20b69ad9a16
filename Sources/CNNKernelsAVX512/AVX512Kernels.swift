import CCPUFeatures
import CNNKernels
import CNNKernelsAVX2

/// The kernels compiled for x86-64 with AVX-512 (F, BW, VL) and VNNI (`-target-cpu
/// icelake-server`): the int8 1x1 convolution on `vpdpbusd`, and the Float convolutions (1x1,
/// depthwise, the first layer's), pooling and resizing sixteen channels wide, each computing the
/// AVX2 set's bits. The residual add is the AVX2 set's (the 1x1 convolutions fuse BlazeFace's). Call only where `AVX512Kernels.isSupported` is true.
public enum AVX512Kernels: NetworkKernelSet {
    /// Whether this processor (and the OS, which must save the ZMM registers) has AVX-512 F, BW,
    /// VL and VNNI, plus AVX2 and FMA.
    public static let isSupported: Bool = pd_cpu_has_avx512_vnni() != 0

    public static func pointwise(input: UnsafePointer<Float>, inStride: Int, pixels: Int,
                                 weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                 output: UnsafeMutablePointer<Float>, outStride: Int, epilogue: NetworkKernels.Epilogue) {
        pointwise16(input: input, inStride: inStride, pixels: pixels, weights: weights, bias: bias,
                    output: output, outStride: outStride, epilogue: epilogue)
    }

    public static func depthwise3x3(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                    stride: Int, padTop: Int, padLeft: Int,
                                    weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                    output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, relu: Bool) {
        depthwise16(input: input, height: height, width: width, channels: channels, stride: stride,
                    padTop: padTop, padLeft: padLeft, weights: weights, bias: bias, output: UnsafeMutableRawPointer(output),
                    outHeight: outHeight, outWidth: outWidth, relu: relu, quantization: nil)
    }

    public static func convolution(input: UnsafePointer<Float>, height: Int, width: Int, inChannels: Int,
                                   kernel: Int, stride: Int, padTop: Int, padLeft: Int,
                                   weights: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                   output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int, outStride: Int,
                                   relu: Bool, patch: UnsafeMutablePointer<Float>) {
        convolution16(input: input, height: height, width: width, inChannels: inChannels, kernel: kernel,
                      stride: stride, padTop: padTop, padLeft: padLeft, weights: weights, bias: bias,
                      output: output, outHeight: outHeight, outWidth: outWidth, outStride: outStride,
                      relu: relu, patch: patch)
    }

    public static func maxPool2x2(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                  output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        maxPool16(input: input, height: height, width: width, channels: channels, output: output,
                  outHeight: outHeight, outWidth: outWidth)
    }

    public static func resizeBilinear(input: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                      output: UnsafeMutablePointer<Float>, outHeight: Int, outWidth: Int) {
        resizeBilinear16(input: input, height: height, width: width, channels: channels, output: output,
                         outHeight: outHeight, outWidth: outWidth)
    }

    public static func add(_ a: UnsafePointer<Float>, aStride: Int, _ b: UnsafePointer<Float>, bStride: Int, pixels: Int,
                           output: UnsafeMutablePointer<Float>, relu: Bool) {
        AVX2Kernels.add(a, aStride: aStride, b, bStride: bStride, pixels: pixels, output: output, relu: relu)
    }
}
