import CNNKernels
import CNNKernelsAVX2

/// The 16-bit integer convolution of the AVX-512 set is the AVX2 set's (`vpmaddwd` over the
/// `pairs` layout, 16-channel blocks): the same sums, so the same bits.
///
/// Measured before settling on that: a kernel of its own on `vpdpwssd` (eight pixels by 32
/// channels per step) was compiled by LLVM (Swift 6.3.1, `icelake-server`) into `vpmaddwd` +
/// `vpaddd` on 512-bit registers, and on this AMD processor (512-bit operations in two halves)
/// the face descriptor ran 4.0-4.2 ms per face with it and 4.0-4.4 with AVX2's: 120 lines of a
/// second hot kernel for nothing, so it went. Worth another look on a processor that runs
/// 512-bit operations whole, with the instruction kept (inline assembly, or a newer compiler).
extension AVX512Kernels {
    /// The AVX2 set's quantisation (its bits are the shared `quantizedLevels`).
    public static func quantizeInt16(_ input: UnsafePointer<Float>, count: Int, _ q: NetworkKernels.Quantization, levels: Int32,
                                     output: UnsafeMutablePointer<Int16>) {
        AVX2Kernels.quantizeInt16(input, count: count, q, levels: levels, output: output)
    }

    /// The AVX2 set's 16-bit integer 1x1 convolution (see above).
    public static func pointwiseInt16(input: UnsafePointer<Int16>, inStride: Int, pixels: Int, weights: UnsafePointer<Int16>,
                                      sumBase: UnsafePointer<Int32>, multipliers: UnsafePointer<Float>,
                                      bias: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, outStride: Int,
                                      epilogue: NetworkKernels.Epilogue) {
        AVX2Kernels.pointwiseInt16(input: input, inStride: inStride, pixels: pixels, weights: weights, sumBase: sumBase,
                                   multipliers: multipliers, bias: bias, output: output, outStride: outStride, epilogue: epilogue)
    }
}
