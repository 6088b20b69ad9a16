import CNNKernels
import CNNKernelsAVX2
import CNNKernelsAVX512
@testable import FaceAnalysis
import Testing

/// The int8 plan against the Float one on the parity fixtures' inputs (three real photos, a close
/// face, noise): the same faces, boxes and scores within stated tolerances; and every int8 kernel
/// set computing the same bits as plain loops (the Int32 sums are exact, the Float epilogue is the
/// same multiply and add).
@Suite struct Int8NetworkTests {
    static let inputs = BlazeFaceParityTests.inputs

    static func calibration(_ file: NetworkFile) throws -> NetworkCalibration {
        try NetworkCalibration.load(NetworkCalibration.path(forWeights: Fixtures.modelsDirectory + "/blazeface-full-range.pdnn"), for: file)
    }

    /// Runs `plan` with `kernels` on a fixture input; returns the regressors and logits, unpadded.
    static func outputs(_ plan: ConvolutionalNetwork, _ kernels: NetworkWorkspace.Kernels, input name: String) throws -> (regressors: [Float], logits: [Float]) {
        let workspace = NetworkWorkspace(network: plan, kernels: kernels)
        let rgb = try Fixtures.readAll(Fixtures.directory + "/blazeface/\(name).rgb")
        let input = workspace.input
        for i in 0..<rgb.count { input[i] = Float(rgb[i]) / 127.5 - 1 }
        workspace.run()
        let r = try #require(workspace.output("regressors")), l = try #require(workspace.output("classificators"))
        var regressors: [Float] = [], logits: [Float] = []
        for anchor in 0..<r.count {
            for v in 0..<16 { regressors.append(r.pointer[anchor * r.stride + v]) }
            logits.append(l.pointer[anchor * l.stride])
        }
        return (regressors, logits)
    }

    static func faces(_ o: (regressors: [Float], logits: [Float])) -> [FaceCandidate] {
        let candidates = o.regressors.withUnsafeBufferPointer { r in
            o.logits.withUnsafeBufferPointer { l in
                BlazeFaceDecoding.decode(regressors: r.baseAddress!, regressorStride: 16, logits: l.baseAddress!, logitStride: 1,
                                         anchors: BlazeFaceDecoding.pixelAnchors(width: 192, height: 192), inputSize: 1, minScore: 0.3)
            }
        }
        return BlazeFaceDecoding.weightedNonMaxSuppression(candidates, threshold: 0.3)
    }

    /// One int8 1x1 convolution through `K`: quantise, then the kernel, into `outStride` floats per pixel.
    static func run<K: NetworkKernelSet>(_: K.Type, _ q: QuantizedPointwise, input: [Float], inStride: Int, pixels: Int,
                                         outStride: Int, residual: [Float]?, residualStride: Int) -> [Float] {
        var output = [Float](repeating: .nan, count: pixels * outStride)
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 2 * input.count, alignment: 64)
        defer { scratch.deallocate() }
        input.withUnsafeBufferPointer { x in K.quantize(x.baseAddress!, count: input.count, q.quantization, output: scratch) }
        let weights: [UInt8] = K.int8Layout == .quads ? q.quads.map { UInt8(bitPattern: $0) }
            : q.pairs.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
        (residual ?? [0]).withUnsafeBufferPointer { r in
            var epilogue = NetworkKernels.Epilogue(reluBeforeAdd: false, residual: nil, residualStride: 0, reluAfterAdd: true)
            if residual != nil {
                epilogue.residual = r.baseAddress
                epilogue.residualStride = residualStride
            }
            weights.withUnsafeBytes { w in
                output.withUnsafeMutableBufferPointer { y in
                    K.pointwiseInt8(input: UnsafeRawPointer(scratch), inStride: inStride, pixels: pixels, weights: w.baseAddress!,
                                    sumBase: q.sumBase, multipliers: q.multipliers, bias: q.bias,
                                    output: y.baseAddress!, outStride: outStride, epilogue: epilogue)
                }
            }
        }
        return output
    }

    @Test("every int8 kernel set computes what plain loops do, bit for bit",
          arguments: [(32, 8, 13, false), (48, 24, 21, true), (64, 128, 9, true), (16, 40, 17, false)])
    func kernelSetsMatchPlainLoops(inChannels: Int, outChannels: Int, pixels: Int, withResidual: Bool) throws {
        var generator = SeededGenerator(seed: UInt64(inChannels * 1000 + outChannels))
        let inStride = (inChannels + 7) / 8 * 8, outStride = (outChannels + 7) / 8 * 8
        let weights = (0..<(outChannels * inChannels)).map { _ in Float.random(in: -1...1, using: &generator) }
        let bias = (0..<outChannels).map { _ in Float.random(in: -1...1, using: &generator) }
        var input = [Float](repeating: 0, count: pixels * inStride)
        for p in 0..<pixels { for c in 0..<inChannels { input[p * inStride + c] = Float.random(in: -3...5, using: &generator) } }
        let residualStride = 8
        let residual = withResidual ? (0..<(pixels * residualStride)).map { _ in Float.random(in: -1...1, using: &generator) } : nil
        let quantization = NetworkKernels.Quantization(minimum: -3, maximum: 5)
        let q = QuantizedPointwise(weights: weights[...], bias: bias[...], outChannels: outChannels, inChannels: inChannels,
                                   inStride: inStride, quantization: quantization)
        // Plain loops: the same quantisation, exact Int32 sums, the same Float operations.
        var want = [Float](repeating: 0, count: pixels * outStride)
        for p in 0..<pixels {
            for o in 0..<outStride {
                var sum = q.sumBase[o]
                for i in 0..<inStride {
                    let x = (input[p * inStride + i] * (1 / quantization.scale)).rounded(.toNearestOrEven) + Float(quantization.zeroPoint)
                    let w = q.quads[(o / 16) * 16 * inStride + (i / 4) * 64 + (o % 16) * 4 + i % 4]
                    sum += Int32(max(0, min(255, x))) * Int32(w)
                }
                var v = Float(sum) * q.multipliers[o] + q.bias[o]
                if let residual, o < residualStride { v += residual[p * residualStride + o] }
                want[p * outStride + o] = max(v, 0)
            }
        }
        let portable = Self.run(PortableKernels.self, q, input: input, inStride: inStride, pixels: pixels, outStride: outStride,
                                residual: residual, residualStride: residualStride)
        #expect(portable == want, "portable differs from plain loops")
        if AVX2Kernels.isSupported {
            #expect(Self.run(AVX2Kernels.self, q, input: input, inStride: inStride, pixels: pixels, outStride: outStride,
                             residual: residual, residualStride: residualStride) == want, "avx2 differs from plain loops")
        }
        if AVX512Kernels.isSupported {
            #expect(Self.run(AVX512Kernels.self, q, input: input, inStride: inStride, pixels: pixels, outStride: outStride,
                             residual: residual, residualStride: residualStride) == want, "avx512 differs from plain loops")
        }
    }

    /// The whole int8 network, with the depthwise steps writing quantised bytes (AVX-512) or Int16
    /// (AVX2): the same outputs bit for bit, since both sets run the same Float steps with FMA.
    @Test("the int8 network gives the same bits with AVX2 and AVX-512", .enabled(if: AVX2Kernels.isSupported && AVX512Kernels.isSupported, "needs a processor with AVX2 and AVX-512"), arguments: inputs)
    func avx2AndAVX512Agree(name: String) throws {
        let file = try NetworkFile.load(Fixtures.modelsDirectory + "/blazeface-full-range.pdnn")
        let plan = try ConvolutionalNetwork(file: file, precision: .int8, calibration: try Self.calibration(file))
        #expect(!plan.depthwiseQuantization.isEmpty)
        let avx2 = try Self.outputs(plan, .avx2, input: name), avx512 = try Self.outputs(plan, .avx512, input: name)
        #expect(avx2.logits == avx512.logits)
        #expect(avx2.regressors == avx512.regressors)
    }

    /// Tolerances: a face of 0.5 or more in either plan is found by the other (score 0.3 or more)
    /// with IoU >= 0.9 and a score within 0.02; logits within 1 wherever either is above -4 (a
    /// probability of 0.018). Measured: IoU 0.95 or more, scores within 0.008, logits within 0.73.
    @Test("int8 finds the Float plan's faces with close boxes and scores", arguments: inputs)
    func int8MatchesFloat(name: String) throws {
        let file = try NetworkFile.load(Fixtures.modelsDirectory + "/blazeface-full-range.pdnn")
        let float = try Self.outputs(try ConvolutionalNetwork(file: file), .best, input: name)
        let int8 = try Self.outputs(try ConvolutionalNetwork(file: file, precision: .int8, calibration: try Self.calibration(file)),
                                    .best, input: name)
        var logitError: Float = 0
        for (a, b) in zip(float.logits, int8.logits) where max(a, b) > -4 { logitError = max(logitError, abs(a - b)) }
        let floatFaces = Self.faces(float), int8Faces = Self.faces(int8)
        var worstIoU: Float = 1, worstScore: Float = 0
        for (mine, theirs) in [(floatFaces, int8Faces), (int8Faces, floatFaces)] {
            for face in mine where face.score >= 0.5 {
                let match = theirs.max { $0.intersectionOverUnion(face) < $1.intersectionOverUnion(face) }
                let iou = match?.intersectionOverUnion(face) ?? 0
                worstIoU = min(worstIoU, iou)
                worstScore = max(worstScore, abs((match?.score ?? 0) - face.score))
            }
        }
        #expect(logitError <= 1, "logits differ by up to \(logitError)")
        #expect(worstIoU >= 0.9, "a face's box moved: IoU \(worstIoU)")
        #expect(worstScore <= 0.02, "a face's score moved by \(worstScore)")
    }
}
