/// A face as the descriptor network takes it: 150x150 RGB pixels, aligned the way dlib's
/// `get_face_chip(size 150, padding 0.25)` aligns one (see `FaceChip+Alignment.swift`).
public struct FaceChip: Sendable, Equatable {
    /// `FaceDescriptorNetwork.chipSize`² pixels of R, G, B bytes, row by row.
    public let rgb: [UInt8]

    /// A chip from its pixels; throws `invalidParameter` unless there are exactly 150x150x3 bytes.
    public init(rgb: [UInt8]) throws(FaceAnalysisError) {
        let size = FaceDescriptorNetwork.chipSize
        guard rgb.count == size * size * 3 else {
            throw FaceAnalysisError(.invalidParameter, "a face chip is \(size)x\(size) RGB (\(size * size * 3) bytes), not \(rgb.count) bytes")
        }
        self.rgb = rgb
    }
}
