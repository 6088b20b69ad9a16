import Foundation
import PhotoDecoding
import Testing
@testable import FaceAnalysis

@Suite struct VerdictTests {
    static let fixed = Verdict(
        faces: [
            Verdict.Face(region: FaceRegion(x: 176, y: 66, width: 95, height: 95, neighbors: 12, detectorScore: 3.25),
                         probability: 0.98765, confirmed: true),
            Verdict.Face(region: FaceRegion(x: 10, y: 400, width: 40, height: 40, neighbors: 3, detectorScore: 0.5),
                         probability: 0.125, confirmed: false),
        ],
        model: "face-confirm@0123abcd", cascade: "haarcascade_frontalface_default.xml",
        analysisSize: Verdict.Size(width: 512, height: 384), milliseconds: 41.23456)

    @Test func encodingIsPinned() throws {
        #expect(try Self.fixed.json() == #"{"analysisSize":{"height":384,"width":512},"cascade":"haarcascade_frontalface_default.xml","detector":"haarcascade_frontalface_default.xml","faces":[{"confirmed":true,"probability":0.9877,"region":{"detectorScore":3.25,"height":95,"neighbors":12,"width":95,"x":176,"y":66}},{"confirmed":false,"probability":0.125,"region":{"detectorScore":0.5,"height":40,"neighbors":3,"width":40,"x":10,"y":400}}],"label":"faces","milliseconds":41.235,"model":"face-confirm@0123abcd","score":0.9877,"version":1}"#)
    }

    @Test func blazeFaceEncodingIsPinned() throws {
        let region = FaceRegion(x: 10, y: 20, width: 30, height: 40, neighbors: 5, detectorScore: 0.91234,
                                keypoints: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], levels: 2)
        let verdict = Verdict(faces: [Verdict.Face(region: region, probability: 0.8, confirmed: true)],
                              model: "face-verdict@00000001", detector: "blazeface-full-range@e5b08c53",
                              analysisSize: Verdict.Size(width: 600, height: 400), milliseconds: 12)
        #expect(try verdict.json() == #"{"analysisSize":{"height":400,"width":600},"detector":"blazeface-full-range@e5b08c53","faces":[{"confirmed":true,"probability":0.8,"region":{"detectorScore":0.9123,"height":40,"keypoints":[1,2,3,4,5,6,7,8,9,10,11,12],"levels":2,"neighbors":5,"width":30,"x":10,"y":20}}],"label":"faces","milliseconds":12,"model":"face-verdict@00000001","score":0.8,"version":1}"#)
        #expect(try Verdict.decode(json: verdict.json()) == verdict)
    }

    @Test func errorEncodingIsPinned() throws {
        let verdict = Verdict(decodeError: DecodeError(.corrupt, "Premature end of JPEG file", path: "/photos/a.jpg"),
                              milliseconds: 2.5)
        #expect(try verdict.json() == #"{"error":{"code":"corrupt","message":"Premature end of JPEG file"},"faces":[],"label":"error","milliseconds":2.5,"score":0,"version":1}"#)
    }

    @Test(arguments: [
        Self.fixed,
        Verdict(faces: [], model: "m@00000000", cascade: "c", analysisSize: Verdict.Size(width: 1, height: 1),
                milliseconds: 0.001),
        Verdict(failure: Verdict.Failure(code: "too-large", message: "40000x40000 is over the ceiling"),
                milliseconds: 0),
    ])
    func roundTripsUnchanged(verdict: Verdict) throws {
        let json = try verdict.json()
        let decoded = try Verdict.decode(json: json)
        #expect(decoded == verdict)
        #expect(try decoded.json() == json)
    }

    @Test(arguments: [
        ([Float](), [Bool](), Verdict.Label.noFaces, Float(0)),
        ([0.2, 0.4], [false, false], .noFaces, 0.4),
        ([0.2, 0.9, 0.6], [false, true, true], .faces, 0.9),
    ])
    func labelAndScoreFollowTheFaces(probabilities: [Float], confirmed: [Bool], label: Verdict.Label, score: Float) {
        let faces = zip(probabilities, confirmed).map { probability, confirmed in
            Verdict.Face(region: FaceRegion(x: 0, y: 0, width: 30, height: 30), probability: probability,
                         confirmed: confirmed)
        }
        let verdict = Verdict(faces: faces, model: "m", cascade: "c", analysisSize: Verdict.Size(width: 64, height: 64),
                              milliseconds: 1)
        #expect(verdict.label == label)
        #expect(verdict.score == score)
        #expect(verdict.error == nil)
    }

    @Test func notAVerdictIsMalformed() {
        let error = #expect(throws: FaceAnalysisError.self) { try Verdict.decode(json: #"{"label":"maybe"}"#) }
        #expect(error?.code == .malformedVerdict)
    }

    @Test func nonFiniteValuesCannotBeEncoded() {
        var verdict = Self.fixed
        verdict.milliseconds = .nan
        let error = #expect(throws: FaceAnalysisError.self) { try verdict.json() }
        #expect(error?.code == .malformedVerdict)
    }

    /// A hand-made model on crop brightness: a bright box is a face, a dark one is not.
    @Test func classifierConfirmsAndRejectsBoxes() throws {
        let spec = Features.Spec(cropSize: 4, cellSize: 2, orientationBins: 1, layoutGrid: 1, groups: [.intensity])
        let model = try LinearModel(name: "bright", spec: spec, means: [0.5, 0], scales: [0.1, 1],
                                    weights: [2, 0], bias: 0)
        let classifier = try FaceClassifier(model: model)
        let pixels: [UInt8] = (0..<(100 * 50)).map { ($0 % 100) < 50 ? 230 : 25 }
        let image = Image(width: 100, height: 50, channels: 1, pixels: pixels)
        let bright = FaceRegion(x: 5, y: 5, width: 40, height: 40, neighbors: 4, detectorScore: 1.5)
        let dark = FaceRegion(x: 55, y: 5, width: 40, height: 40, neighbors: 2)
        let verdict = try classifier.verdict(for: image, regions: [bright, dark], cascade: "test.xml", milliseconds: 3)
        #expect(verdict.label == .faces)
        #expect(verdict.faces.map(\.region) == [bright, dark])
        #expect(verdict.faces.map(\.confirmed) == [true, false])
        #expect(verdict.faces[0].probability > 0.99 && verdict.faces[1].probability < 0.01)
        #expect(verdict.score == verdict.faces[0].probability)
        #expect(verdict.model == model.identifier)
        #expect(verdict.cascade == "test.xml")
        #expect(verdict.analysisSize == Verdict.Size(width: 100, height: 50))
        let darkOnly = try classifier.verdict(for: image, regions: [dark], cascade: "test.xml", milliseconds: 3)
        #expect(darkOnly.label == .noFaces)
    }
}
