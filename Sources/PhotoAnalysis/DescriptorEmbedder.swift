import FaceAnalysis
import PhotoDecoding
import Synchronization

/// The face descriptor network (`FaceDescriptorNetwork`, dlib's ResNet on our kernels) as the
/// pipeline's `FaceEmbedder`: each confirmed face's chip aligned from its keypoints in the image
/// the detector searched, and its 128 values. A face it cannot embed (no keypoints, no usable
/// chip) leaves the photo's faces without embeddings, as the seam's rule says.
///
/// Each call borrows an idle `FaceDescriptorWorkspace` (about 1.4 MB of buffers) and gives it
/// back, so a run keeps one per slot thread instead of making one per photo.
public struct DescriptorEmbedder: FaceEmbedder {
    public let network: FaceDescriptorNetwork
    private let idle = IdleWorkspaces()

    public init(network: FaceDescriptorNetwork) {
        self.network = network
    }

    public func embeddings(image: Image, faces: [Verdict.Face]) -> [[Float]] {
        guard !faces.isEmpty else { return [] }
        let workspace = idle.workspaces.withLock { $0.popLast() } ?? FaceDescriptorWorkspace(network: network)
        defer { idle.workspaces.withLock { $0.append(workspace) } }
        let found = network.embeddings(image: image, faces: faces, in: workspace)
        guard found.allSatisfy({ $0 != nil }) else { return [] }
        return found.compactMap { $0 }
    }

    /// The workspaces no call is using (as many as calls ever ran at once).
    private final class IdleWorkspaces: Sendable {
        let workspaces = Mutex<[FaceDescriptorWorkspace]>([])
    }
}
