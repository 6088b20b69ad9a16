import CNNKernels
import CNNKernelsAVX2
import CNNKernelsAVX512
@testable import FaceAnalysis
import Testing

/// The face descriptor's 16-bit integer convolution (`NetworkKernels+Int16.swift`): every kernel
/// set quantises to 0...1023 and sums Int16 products exactly as plain loops do, bit for bit, with
/// weights as large as `QuantizedConvolution` lets them be.
@Suite struct Int16NetworkKernelTests {
    /// Quantises `input` and runs the 1x1 convolution through `K`.
    static func run<K: NetworkKernelSet>(_: K.Type, input: [Float], _ q: NetworkKernels.Quantization, inStride: Int, pixels: Int,
                                         weights: [Int16], sumBase: [Int32], multipliers: [Float], bias: [Float],
                                         outStride: Int, residual: [Float]?) -> (quantized: [Int16], output: [Float]) {
        var quantized = [Int16](repeating: -1, count: input.count)
        var output = [Float](repeating: .nan, count: pixels * outStride)
        input.withUnsafeBufferPointer { x in
            quantized.withUnsafeMutableBufferPointer { K.quantizeInt16(x.baseAddress!, count: input.count, q, levels: 1023, output: $0.baseAddress!) }
        }
        (residual ?? [0]).withUnsafeBufferPointer { r in
            var epilogue = NetworkKernels.Epilogue(reluBeforeAdd: true, residual: nil, residualStride: 0, reluAfterAdd: true)
            if residual != nil {
                epilogue.residual = r.baseAddress
                epilogue.residualStride = outStride
            }
            output.withUnsafeMutableBufferPointer { y in
                K.pointwiseInt16(input: quantized, inStride: inStride, pixels: pixels, weights: weights, sumBase: sumBase,
                                 multipliers: multipliers, bias: bias, output: y.baseAddress!, outStride: outStride, epilogue: epilogue)
            }
        }
        return (quantized, output)
    }

    @Test("every set quantises to 0...1023 and sums Int16 products as plain loops do, bit for bit",
          arguments: [(288, 32, 13, false), (2304, 256, 9, true), (148, 48, 22, true), (576, 64, 8, false)])
    func kernelSetsMatchPlainLoops(inStride: Int, outStride: Int, pixels: Int, withResidual: Bool) throws {
        // (The quantisers take whole vectors of 8: the tensors are channel-padded.)
        try #require(pixels * inStride % 8 == 0)
        var generator = SeededGenerator(seed: UInt64(inStride * 1000 + outStride))
        let weightMax = min(Int(Int16.max), Int(Int32.max) / (1023 * inStride))
        let weights = (0..<(outStride * inStride)).map { _ in Int16(Int.random(in: -weightMax...weightMax, using: &generator)) }
        // A nonzero zero point: the sum base takes it out, as `FaceDescriptorWorkspace` makes it.
        let input = (0..<(pixels * inStride)).map { _ in Float.random(in: -0.5...4, using: &generator) }
        let q = NetworkKernels.Quantization(minimum: -0.5, maximum: 4, levels: 1023)
        #expect(q.zeroPoint > 0)
        var sumBase = [Int32](repeating: 0, count: outStride)
        for o in 0..<outStride {
            var sum: Int32 = 0
            for i in 0..<inStride { sum += Int32(weights[(o / 16) * 16 * inStride + (i / 2) * 32 + (o % 16) * 2 + i % 2]) }
            sumBase[o] = 0 &- q.zeroPoint &* sum
        }
        let multipliers = (0..<outStride).map { _ in Float.random(in: 1e-7...1e-5, using: &generator) }
        let bias = (0..<outStride).map { _ in Float.random(in: -1...1, using: &generator) }
        let residual = withResidual ? (0..<(pixels * outStride)).map { _ in Float.random(in: -1...1, using: &generator) } : nil
        // Plain loops: the same quantisation, exact Int32 sums, the same Float operations.
        let quantized = input.map { x -> Int16 in
            let v = (x * (1 / q.scale)).rounded(.toNearestOrEven) + Float(q.zeroPoint)
            return Int16(max(0, min(1023, v)))
        }
        var want = [Float](repeating: 0, count: pixels * outStride)
        for p in 0..<pixels {
            for o in 0..<outStride {
                var sum = sumBase[o]
                for i in 0..<inStride {
                    sum &+= Int32(quantized[p * inStride + i]) * Int32(weights[(o / 16) * 16 * inStride + (i / 2) * 32 + (o % 16) * 2 + i % 2])
                }
                var v = max(Float(sum) * multipliers[o] + bias[o], 0)
                if let residual { v += residual[p * outStride + o] }
                want[p * outStride + o] = max(v, 0)
            }
        }
        func check<K: NetworkKernelSet>(_ set: K.Type, _ name: String) {
            let got = Self.run(set, input: input, q, inStride: inStride, pixels: pixels, weights: weights, sumBase: sumBase,
                               multipliers: multipliers, bias: bias, outStride: outStride, residual: residual)
            #expect(got.quantized == quantized, "\(name) quantises differently")
            #expect(got.output.map(\.bitPattern) == want.map(\.bitPattern), "\(name) differs from plain loops")
        }
        check(PortableKernels.self, "portable")
        if AVX2Kernels.isSupported { check(AVX2Kernels.self, "avx2") }
        if AVX512Kernels.isSupported { check(AVX512Kernels.self, "avx512") }
    }
}
