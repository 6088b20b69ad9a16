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
    /// The detector's own confidence: BlazeFace's probability, or the cascade's neighbour count;
    /// 0 when the detector gives none.
    public var detectorScore: Float
    /// BlazeFace's six keypoints (right eye, left eye, nose tip, mouth, right ear, left ear) as
    /// x, y pairs in the same pixels as the box; nil for cascade boxes.
    public var keypoints: [Float]?
    /// How many BlazeFace pyramid levels found this face; nil for cascade boxes.
    public var levels: Int?
    /// BlazeFace's scores when it looked again at this face alone, centred, with the face 48 and
    /// then 32 pixels wide (`BlazeFace.secondLooks`); nil when it did not (a cascade box, or a first
    /// score below `BlazeFaceOptions.secondLookMinScore`).
    public var secondLooks: [Float]?

    /// A box with the detector's grouping count and confidence.
    public init(x: Int, y: Int, width: Int, height: Int, neighbors: Int = 0, detectorScore: Float = 0,
                keypoints: [Float]? = nil, levels: Int? = nil, secondLooks: [Float]? = nil) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.neighbors = neighbors
        self.detectorScore = detectorScore
        self.keypoints = keypoints
        self.levels = levels
        self.secondLooks = secondLooks
    }

    /// A BlazeFace detection as a region: its `faceBox` rounded to whole pixels, `neighbors` the number
    /// of raw candidates blended into it, the score, the keypoints (to whole pixels) and the levels.
    public init(_ detection: BlazeFaceDetection) {
        let f = detection.face
        let box = detection.faceBox
        let x0 = Int(box.x.rounded()), y0 = Int(box.y.rounded())
        self.init(x: x0, y: y0, width: max(1, Int((box.x + box.width).rounded()) - x0),
                  height: max(1, Int((box.y + box.height).rounded()) - y0),
                  neighbors: detection.support, detectorScore: f.score,
                  keypoints: f.keypoints.flatMap { [$0.x.rounded(), $0.y.rounded()] },
                  levels: detection.levels)
    }

    /// The whole of an image as one region: how a training crop is seen.
    public static func whole(width: Int, height: Int) -> FaceRegion {
        FaceRegion(x: 0, y: 0, width: width, height: height)
    }
}
