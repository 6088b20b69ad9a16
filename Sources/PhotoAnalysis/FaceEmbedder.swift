import FaceAnalysis
import PhotoDecoding

/// Turns a photo's confirmed faces into face descriptors: the seam where dlib's ResNet face
/// descriptor (ported into FaceAnalysis as a network) plugs into analysis. `FacePipeline` calls
/// it once per photo, with the decoded image the detector searched (RGB for BlazeFace, gray at
/// the analysis size for a cascade) and the faces the verdict confirms, whose boxes and keypoints
/// are in that image's pixels.
///
/// Each embedding is `FaceEmbedding.dimension` (128) Floats in dlib's space, where two faces
/// closer than 0.6 (Euclidean) are one person: clustering relies on that scale.
public protocol FaceEmbedder: Sendable {
    /// One embedding per face of `faces`, in their order. A result of another count, or an
    /// embedding that is not 128 finite Floats, is not banked (the faces are, without embeddings).
    func embeddings(image: Image, faces: [Verdict.Face]) -> [[Float]]
}
