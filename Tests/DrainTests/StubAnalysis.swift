import FaceAnalysis
import PhotoAnalysis

extension AnalysedPhoto {
    /// What a stand-in analyser returns: a photo with no faces, found by no real detector.
    static var noFaces: AnalysedPhoto {
        AnalysedPhoto(verdict: Verdict(faces: [], model: "stub", detector: "stub", analysisSize: Verdict.Size(width: 1, height: 1),
                                       milliseconds: 0))
    }
}
