/// A face as the descriptor network takes it: 150x150 RGB pixels, aligned the way dlib's
/// `get_face_chip(size 150, padding 0.25)` aligns one (see `FaceChip+Alignment.swift`).
public struct FaceChip: Sendable, Equatable {
    /// The least width, in pixels of the image a chip is cut from, of a face whose descriptor
    /// tells who it is. Smaller faces are blown up to 150x150 from too few pixels, and their
    /// descriptors fall together: on the labelled photos, 232 of the 406 pairs of different
    /// people's faces (12-56 px wide) in one 1927 group photo lie within 0.6, against 5 of the 696
    /// pairs known to be different people among faces from 60 px
    /// (`Scripts/measure-people-threshold`, Models/face-embedding.md). Such faces are kept, with
    /// their boxes, and left out of people.
    public static let minimumFaceSize = 60

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
