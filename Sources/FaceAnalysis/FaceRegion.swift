/// A face candidate: a box in the upright analysed image, in pixels, with what the detector said
/// about it.
///
/// The box is what the cascade detector returns after neighbour grouping (OpenCV's `Rect`), so
/// `x`, `y` is the top-left corner and the box may touch or cross the image border; feature
/// extraction clamps it to the image.
public struct FaceRegion: Codable, Sendable, Equatable, Hashable {
    /// Left edge, in pixels from the image's left side.
    public var x: Int
    /// Top edge, in pixels from the image's top.
    public var y: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// How many raw detections were grouped into this box (OpenCV's `minNeighbors` count); 0 when
    /// the box did not come from a grouping detector.
    public var neighbors: Int
    /// The detector's own confidence (OpenCV's level weight); 0 when the detector gives none.
    public var detectorScore: Float

    /// A box with the detector's grouping count and confidence.
    public init(x: Int, y: Int, width: Int, height: Int, neighbors: Int = 0, detectorScore: Float = 0) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.neighbors = neighbors
        self.detectorScore = detectorScore
    }

    /// The whole of an image as one region: how a training crop is seen.
    public static func whole(width: Int, height: Int) -> FaceRegion {
        FaceRegion(x: 0, y: 0, width: width, height: height)
    }
}
