import FaceAnalysis
import Foundation
import PhotoDecoding
import Testing

/// Our chips, cut around BlazeFace's keypoints, against dlib's own chips of the same faces (cut
/// around its 5-point landmarks): what the alignment costs, as the descriptors' distance.
@Suite struct FaceChipAlignmentTests {
    /// The faces both detectors find in SampleImages/ (dlib's HOG detector also reports a second,
    /// small box lower in astronaut.png, `astronaut-0`, which BlazeFace does not).
    static let faces = ["hopper-0", "astronaut-1", "three-portraits-0", "three-portraits-1"]

    @Test("the similarity fit recovers a known transform exactly")
    func similarityFit() {
        let template = FaceChip.template
        // Scale 1.7, rotation 20 degrees, then a shift: the fit must give them back.
        let angle = 20.0 * .pi / 180, a = 1.7 * cos(angle), b = 1.7 * sin(angle)
        let points = template.map { SIMD2(a * $0.x - b * $0.y + 300, b * $0.x + a * $0.y + 120) }
        let fit = FaceChip.similarity(from: template, to: points)
        #expect(abs(fit.a - a) < 1e-9 && abs(fit.b - b) < 1e-9)
        #expect(abs(fit.offset.x - 300) < 1e-7 && abs(fit.offset.y - 120) < 1e-7)
    }

    @Test("a chip is the photo sampled through the fitted transform")
    func chipSamplesThePhoto() throws {
        // A photo whose pixel (x, y) holds (x, y, 7): keypoints at the template itself (identity)
        // must give a chip whose pixel (c, r) holds (c, r, 7).
        let side = 200
        var pixels = [UInt8](repeating: 0, count: side * side * 3)
        for y in 0..<side { for x in 0..<side { pixels[3 * (y * side + x)] = UInt8(min(x, 255)); pixels[3 * (y * side + x) + 1] = UInt8(min(y, 255)); pixels[3 * (y * side + x) + 2] = 7 } }
        let image = Image(width: side, height: side, channels: 3, pixels: pixels)
        let chip = try FaceChip.aligned(from: image, keypoints: FaceChip.template.map { SIMD2(Float($0.x), Float($0.y)) })
        for (c, r) in [(0, 0), (75, 40), (149, 149), (10, 120)] {
            let at = 3 * (r * 150 + c)
            #expect(chip.rgb[at] == UInt8(c) && chip.rgb[at + 1] == UInt8(r) && chip.rgb[at + 2] == 7, "pixel \(c), \(r)")
        }
        #expect(throws: FaceAnalysisError.self) { try FaceChip.aligned(from: image, keypoints: [SIMD2(1, 1), SIMD2(1, 1), SIMD2(2, 2), SIMD2(3, 3)]) }
        // A cascade's box has no keypoints.
        #expect(throws: FaceAnalysisError.self) { try FaceChip.aligned(from: image, region: FaceRegion(x: 10, y: 10, width: 50, height: 50)) }
    }

    @Test("outside the photo a chip is black; a face far larger than the chip is halved first, keeping its colour")
    func edgesAndLargeFaces() throws {
        let side = 700
        let pixels = [UInt8]((0..<(side * side)).flatMap { _ in [100, 150, 200] as [UInt8] })
        let image = Image(width: side, height: side, channels: 3, pixels: pixels)
        // The template moved 50 px left: the chip's columns up to 48 lie left of the photo.
        let shifted = try FaceChip.aligned(from: image, keypoints: FaceChip.template.map { SIMD2(Float($0.x) - 50, Float($0.y)) })
        for (c, expected) in [(10, [0, 0, 0]), (48, [0, 0, 0]), (100, [100, 150, 200]), (149, [100, 150, 200])] as [(Int, [UInt8])] {
            let at = 3 * (75 * 150 + c)
            #expect(Array(shifted.rgb[at..<(at + 3)]) == expected, "column \(c)")
        }
        // Four times the chip's size: halved twice, then sampled; a flat photo stays flat.
        let large = try FaceChip.aligned(from: image, keypoints: FaceChip.template.map { SIMD2(Float($0.x) * 4 + 20, Float($0.y) * 4 + 20) })
        #expect(large.rgb.count == 150 * 150 * 3)
        let off = (0..<(150 * 150)).filter { Array(large.rgb[(3 * $0)..<(3 * $0 + 3)]) != [100, 150, 200] }.map { ($0 % 150, $0 / 150) }
        #expect(off.isEmpty, "\(off.count) pixels differ, first \(off.prefix(5))")
        // Wholly outside the photo: all black, not a crash.
        let outside = try FaceChip.aligned(from: image, keypoints: FaceChip.template.map { SIMD2(Float($0.x) + 5000, Float($0.y)) })
        #expect(outside.rgb.allSatisfy { $0 == 0 })
        // A gray photo gives the same gray in all three channels.
        let gray = Image(width: 200, height: 200, channels: 1, pixels: [UInt8](repeating: 77, count: 200 * 200))
        let grayChip = try FaceChip.aligned(from: gray, keypoints: FaceChip.template.map { SIMD2(Float($0.x), Float($0.y)) })
        #expect(Array(grayChip.rgb[(3 * 7550)..<(3 * 7550 + 3)]) == [77, 77, 77])
    }

    @Test("chips from BlazeFace's keypoints give dlib's person: what the alignment costs")
    func alignmentAgainstDlibChips() throws {
        let reference = try FaceEmbeddingParityTests.reference()
        let network = try FaceEmbeddingParityTests.network()
        let blazeFace = try BlazeFace(contentsOf: Fixtures.modelsDirectory + "/blazeface-full-range.pdnn")
        var cosines: [Double] = []
        for name in Self.faces {
            let face = try #require(reference.faces[name])
            let image = try PhotoDecoder.decode(Fixtures.modelsDirectory + "/../SampleImages/" + face.photo, options: DecodeOptions(output: .rgb))
            // BlazeFace's face whose eyes lie nearest dlib's (the mean of each eye's two corners).
            func middle(_ i: Int, _ j: Int) -> SIMD2<Float> {
                let x = (face.landmarks[i][0] + face.landmarks[j][0]) / 2, y = (face.landmarks[i][1] + face.landmarks[j][1]) / 2
                return SIMD2(Float(x), Float(y))
            }
            let dlibEyes = [middle(2, 3), middle(0, 1)]
            let found = try blazeFace.detect(in: image, options: BlazeFaceOptions(minFaceSize: 24, minScore: 0.5))
            let match = try #require(found.min { distanceToEyes($0, dlibEyes) < distanceToEyes($1, dlibEyes) }, "no face in \(face.photo)")
            // MediaPipe's first keypoint is the eye on the image's left, as the template has it.
            #expect(match.face.keypoints[0].x < match.face.keypoints[1].x)
            let eyeSpan = ((dlibEyes[1] - dlibEyes[0]) * (dlibEyes[1] - dlibEyes[0])).sum().squareRoot()
            #expect(distanceToEyes(match, dlibEyes) < 0.5 * eyeSpan, "\(name): BlazeFace's eyes are far from dlib's")
            let chip = try FaceChip.aligned(from: image, keypoints: match.face.keypoints)
            let ours = network.embedding(chip: chip)
            let cosine = FaceEmbeddingParityTests.cosine(ours, face.descriptor)
            let distance = FaceDescriptorNetwork.distance(ours, face.descriptor)
            cosines.append(cosine)
            // The verdict keeps the keypoints to whole pixels: a chip from them is the same person still.
            let fromVerdict = network.embedding(chip: try FaceChip.aligned(from: image, region: FaceRegion(match)))
            let rounding = FaceDescriptorNetwork.distance(fromVerdict, ours)
            print("alignment \(name): whole-pixel keypoints (as a verdict keeps them) move the descriptor by \(String(format: "%.4f", rounding))")
            #expect(rounding < 0.1, "\(name): rounding the keypoints moved the descriptor by \(rounding)")
            print("alignment \(name): cosine \(String(format: "%.4f", cosine)), distance \(String(format: "%.4f", distance)) to dlib's descriptor of its own chip")
            // Still the same person by dlib's own rule.
            #expect(distance < FaceDescriptorNetwork.sameFaceDistance, "\(name): distance \(distance)")
        }
        // The different people stay apart through our chips too.
        print("alignment: worst cosine \(String(format: "%.4f", cosines.min() ?? 0)), mean \(String(format: "%.4f", cosines.reduce(0, +) / Double(max(1, cosines.count))))")
    }

    @Test("a verdict's faces get a descriptor each, a cascade's box none")
    func verdictFaces() throws {
        let network = try FaceEmbeddingParityTests.network()
        let blazeFace = try BlazeFace(contentsOf: Fixtures.modelsDirectory + "/blazeface-full-range.pdnn")
        let image = try PhotoDecoder.decode(Fixtures.modelsDirectory + "/../SampleImages/three-portraits.jpg", options: DecodeOptions(output: .rgb))
        let found = try blazeFace.detect(in: image, options: BlazeFaceOptions(minFaceSize: 24, minScore: 0.5))
        #expect(found.count >= 2)
        let faces = found.map { Verdict.Face(region: FaceRegion($0), probability: 0.9, confirmed: true) }
            + [Verdict.Face(region: FaceRegion(x: 10, y: 10, width: 60, height: 60), probability: 0.9, confirmed: true)]
        let descriptors = network.embeddings(image: image, faces: faces)
        #expect(descriptors.count == faces.count)
        #expect(descriptors.last! == nil)
        let people = descriptors.dropLast().compactMap { $0 }
        #expect(people.count == found.count && people.allSatisfy { $0.count == 128 && $0.allSatisfy(\.isFinite) })
        // The portraits are of different people.
        #expect(FaceDescriptorNetwork.distance(people[0], people[1]) > FaceDescriptorNetwork.sameFaceDistance)
        #expect(network.embeddings(image: image, faces: []).isEmpty)
    }

    func distanceToEyes(_ detection: BlazeFaceDetection, _ eyes: [SIMD2<Float>]) -> Float {
        let k = detection.face.keypoints
        return max(((k[0] - eyes[0]) * (k[0] - eyes[0])).sum(), ((k[1] - eyes[1]) * (k[1] - eyes[1])).sum()).squareRoot()
    }
}
