@testable import FaceAnalysis
import Foundation
import Testing

/// The descriptor network's own steps against plain loops, on the shapes dlib's ResNet gives them
/// (a downsampling block's skip one row and column larger and half as deep), and the PDNN version-2
/// file's refusals.
struct EmbeddingKernelTests {
    typealias Shape = EmbeddingKernels.Shape

    static func values(_ count: Int, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in Float(generator.next() >> 40) / Float(1 << 24) * 2 - 1 }
    }

    @Test("the residual add zero-pads the smaller operand in space and channels", arguments: [
        (Shape(height: 3, width: 3, channels: 256), Shape(height: 4, width: 4, channels: 128)),   // dlib's 8x8 -> 4x4 block
        (Shape(height: 17, width: 17, channels: 64), Shape(height: 17, width: 17, channels: 32)),
        (Shape(height: 5, width: 2, channels: 16), Shape(height: 2, width: 6, channels: 24)),
    ])
    func zeroPaddingAdd(a: Shape, b: Shape) {
        let out = Shape(height: max(a.height, b.height), width: max(a.width, b.width), channels: max(a.channels, b.channels))
        let x = Self.values(a.floats, seed: 1), y = Self.values(b.floats, seed: 2)
        var want = [Float](repeating: 0, count: out.floats)
        for r in 0..<out.height {
            for c in 0..<out.width {
                for k in 0..<out.channels {
                    let va = r < a.height && c < a.width && k < a.channels ? x[(r * a.width + c) * a.channels + k] : 0
                    let vb = r < b.height && c < b.width && k < b.channels ? y[(r * b.width + c) * b.channels + k] : 0
                    want[(r * out.width + c) * out.channels + k] = max(va + vb, 0)
                }
            }
        }
        var got = [Float](repeating: .nan, count: out.floats)
        x.withUnsafeBufferPointer { px in
            y.withUnsafeBufferPointer { py in
                got.withUnsafeMutableBufferPointer { po in
                    EmbeddingKernels.addZeroPadded(px.baseAddress!, a, py.baseAddress!, b, output: po.baseAddress!, out, relu: true)
                }
            }
        }
        #expect(got == want)
    }

    @Test("pooling, the mean and the fully connected layer match plain loops")
    func poolingMeanAndFullyConnected() {
        let (h, w, c) = (9, 7, 16)
        let x = Self.values(h * w * c, seed: 3)
        // 3x3 stride-2 max pooling (dlib's, no padding): 4x3 outputs.
        var maxWant = [Float](), maxGot = [Float](repeating: .nan, count: 4 * 3 * c)
        for oy in 0..<4 { for ox in 0..<3 { for k in 0..<c {
            var m = -Float.infinity
            for ky in 0..<3 { for kx in 0..<3 { m = max(m, x[((2 * oy + ky) * w + 2 * ox + kx) * c + k]) } }
            maxWant.append(m)
        } } }
        // 2x2 stride-2 average pooling: 4x3 outputs, the odd last row and column left out.
        var avgWant = [Float](), avgGot = [Float](repeating: .nan, count: 4 * 3 * c)
        for oy in 0..<4 { for ox in 0..<3 { for k in 0..<c {
            let v = { (dy: Int, dx: Int) in x[((2 * oy + dy) * w + 2 * ox + dx) * c + k] }
            avgWant.append(((v(0, 0) + v(0, 1)) + (v(1, 0) + v(1, 1))) * 0.25)
        } } }
        var meanGot = [Float](repeating: .nan, count: c), fcGot = [Float](repeating: .nan, count: 5)
        let weights = Self.values(5 * c, seed: 4)
        x.withUnsafeBufferPointer { px in
            let p = px.baseAddress!
            maxGot.withUnsafeMutableBufferPointer { EmbeddingKernels.maxPool(p, height: h, width: w, channels: c, size: 3, stride: 2, output: $0.baseAddress!, outHeight: 4, outWidth: 3) }
            avgGot.withUnsafeMutableBufferPointer { EmbeddingKernels.averagePool2x2(p, height: h, width: w, channels: c, output: $0.baseAddress!, outHeight: 4, outWidth: 3) }
            meanGot.withUnsafeMutableBufferPointer { EmbeddingKernels.mean(p, pixels: h * w, channels: c, output: $0.baseAddress!) }
        }
        meanGot.withUnsafeBufferPointer { m in
            weights.withUnsafeBufferPointer { wt in
                fcGot.withUnsafeMutableBufferPointer { EmbeddingKernels.fullyConnected(m.baseAddress!, inputs: c, weights: wt.baseAddress!, outputs: 5, output: $0.baseAddress!) }
            }
        }
        #expect(maxGot == maxWant)
        #expect(avgGot == avgWant)
        for k in 0..<c {
            let mean = (0..<(h * w)).map { Double(x[$0 * c + k]) }.reduce(0, +) / Double(h * w)
            #expect(abs(Double(meanGot[k]) - mean) < 1e-5)
        }
        for o in 0..<5 {
            let dot = (0..<c).map { Double(weights[o * c + $0]) * Double(meanGot[$0]) }.reduce(0, +)
            #expect(abs(Double(fcGot[o]) - dot) < 1e-5)
        }
    }

    /// A version-2 file around `header` (JSON) and `data`.
    static func file(_ header: String, _ data: [UInt8], version: UInt8 = 2) -> [UInt8] {
        let head = Array(header.utf8)
        var bytes = Array("PDNN".utf8) + [0, 0, 0, version]
        bytes += withUnsafeBytes(of: UInt32(head.count).littleEndian, Array.init) + head
        bytes += [UInt8](repeating: 0, count: (16 - bytes.count % 16) % 16)
        return bytes + data
    }

    static func header(weights: String, values: Int, digest: String) -> String {
        """
        {"format":"photodrain-cnn","version":2,"name":"tiny","input":{"tensor":0,"shape":[150,150,3],"range":[0,255],"channels":"rgb","mean":[1,2,3],"scale":0.5},
         "outputs":{"embedding":1},"tensors":{"0":{"shape":[150,150,3],"name":"in"},"1":{"shape":[1,1,3],"name":"out"}},
         "ops":[{"op":"mean","in":[0],"out":1}],"weights":"\(weights)","data_values":\(values),"data_sha256":"\(digest)"}
        """
    }

    @Test("version 2 reads fp32 and fp16 weights and refuses what its header does not promise")
    func versionTwoFiles() throws {
        let fp32: [UInt8] = [1.5, -2].flatMap { (v: Float) in withUnsafeBytes(of: v.bitPattern.littleEndian, Array.init) }
        let fp16: [UInt8] = [Float16(1.5), Float16(-2)].flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) }
        // SHA-256 of the two data sections (Python's hashlib).
        let digest32 = "252b3318179cc24998f3670913d52d39085cf65b0dfa98fa523ffeab4b6683fe"
        let digest16 = "14c189f9839c32991688a046c54f8ed8c0ee044ebd25e7ef9ed19a30a788e101"
        #expect(fp32 == [0, 0, 0xC0, 0x3F, 0, 0, 0, 0xC0] && fp16 == [0, 0x3E, 0, 0xC0])
        let a = try NetworkFile(bytes: Self.file(Self.header(weights: "float32", values: 2, digest: digest32), fp32))
        #expect(a.version == 2 && a.widenedWeights() == [1.5, -2] && a.inputMean == [1, 2, 3] && a.inputScale == 0.5)
        let b = try NetworkFile(bytes: Self.file(Self.header(weights: "float16", values: 2, digest: digest16), fp16))
        #expect(b.widenedWeights() == [1.5, -2])
        // The wrong count, an unknown storage type, a version byte the header contradicts, a damaged weight.
        for bytes in [Self.file(Self.header(weights: "float32", values: 3, digest: digest32), fp32),
                      Self.file(Self.header(weights: "bfloat16", values: 2, digest: digest16), fp16),
                      Self.file(Self.header(weights: "float32", values: 2, digest: digest32), fp32, version: 1),
                      Self.file(Self.header(weights: "float32", values: 2, digest: digest32), fp32.dropLast() + [0x41])] {
            #expect(throws: FaceAnalysisError.self) { try NetworkFile(bytes: bytes) }
        }
        // A version-2 file is no detector, and a detector's plan refuses it.
        #expect(throws: FaceAnalysisError.self) { try ConvolutionalNetwork(file: a) }
    }
}
