import FaceAnalysis
import PhotoDecoding

/// The face descriptor network (`FaceDescriptorNetwork`, dlib's ResNet on our kernels) as the
/// pipeline's `FaceEmbedder`: each confirmed face's chip aligned from its keypoints in the image
/// the detector searched, and its 128 values. A face it cannot embed (no keypoints, no usable
/// chip) leaves the photo's faces without embeddings, as the seam's rule says.
public struct DescriptorEmbedder: FaceEmbedder {
    public let network: FaceDescriptorNetwork

    public init(network: FaceDescriptorNetwork) {
        self.network = network
    }

    public func embeddings(image: Image, faces: [Verdict.Face]) -> [[Float]] {
        let found = network.embeddings(image: image, faces: faces)
        guard found.allSatisfy({ $0 != nil }) else { return [] }
        return found.compactMap { $0 }
    }
}
