import PhotoDecoding

extension FaceDescriptorNetwork {
    /// The descriptor of each of a verdict's `faces` (`Verdict.faces`, confirmed or not: the caller
    /// picks), in their order, cut from `image`, the image they were found in (their regions are in
    /// its pixels); nil for a face whose region has no keypoints (a cascade's box) or no usable
    /// chip. Runs in `workspace`, or in one made for the call.
    public func embeddings(image: Image, faces: [Verdict.Face], in workspace: FaceDescriptorWorkspace? = nil) -> [[Float]?] {
        guard !faces.isEmpty else { return [] }
        let workspace = workspace ?? FaceDescriptorWorkspace(network: self)
        return faces.map { face in
            guard let chip = try? FaceChip.aligned(from: image, region: face.region) else { return nil }
            return embedding(chip: chip, in: workspace)
        }
    }
}
