@testable import FaceAnalysis
import PhotoDecoding
import Testing

/// The SIMD first stages must accept and reject exactly the windows the one-at-a-time path does,
/// including the skip after a first-stage rejection.
@Suite struct VectorPathTests {
    @Test(arguments: ["haarcascade_frontalface_default", "lbpcascade_frontalface"])
    func vectorAndScalarPathsAgree(cascade: String) throws {
        let detector = try Fixtures.cascade(cascade)
        let image = Resize.bilinear(try Fixtures.image("composite-5-grass.png"), width: 176, height: 132)
        let parameters = DetectionParameters(minNeighbors: 0)
        var timings = DetectionTimings()
        let scalar = try detector.candidates(in: image, parameters: parameters, timings: &timings, vectorStages: 0)
        #expect(!scalar.isEmpty)
        for stages in [1, 3, detector.stageCount] {
            let vector = try detector.candidates(in: image, parameters: parameters, timings: &timings, vectorStages: stages)
            #expect(vector == scalar, "\(stages) vector stages")
        }
    }
}
