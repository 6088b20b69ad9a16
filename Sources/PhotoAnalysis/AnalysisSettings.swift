import FaceAnalysis
import PhotoDecoding

/// Where the analysis finds its detector and model, and how it looks for faces.
public struct AnalysisSettings: Sendable {
    /// Which detector proposes the boxes.
    public var detector: DetectorKind = .blazeface
    /// BlazeFace's weights (`Scripts/convert-blazeface` writes them).
    public var networkPath: String
    /// BlazeFace's arithmetic; the verdict model must have been fitted at the same.
    public var precision = BlazeFace.preferredPrecision
    /// The smallest face BlazeFace looks for, in photo pixels; nil for a fortieth of each photo's
    /// short side, between 8 and 40 pixels (`FaceDetector.automaticMinFaceSize`).
    public var minFaceSize: Int?
    /// The short side photos are analysed at by a cascade.
    public var analysisSize = 480
    /// OpenCV cascade XML (Debian's opencv-data installs these).
    public var cascadePath = AnalysisSettings.defaultCascade
    /// The classifier that decides each box (`photodrain train` writes one).
    public var modelPath: String
    public var detection = DetectionParameters(scaleFactor: 1.1, minNeighbors: 3, minSize: 24)
    /// Refuse photos whose header claims more pixels.
    public var maxPixels = DecodeOptions.defaultMaxPixels
    /// The face descriptor's weights (`Scripts/fetch-face-embedding-model` writes them): each
    /// confirmed face gets an embedding for `people`. Nil: none (`--people off`, or the cascade,
    /// whose boxes have no keypoints to align a chip by).
    public var embeddingPath: String?

    public static let defaultCascade = "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml"
    /// The shipped files: BlazeFace's weights, the verdict model for its boxes, and the older model
    /// for cascade boxes. Where they are found is the runner's business (`ModelSearch` in Drain):
    /// the settings hold paths.
    public static let networkFile = "blazeface-full-range.pdnn"
    public static let verdictModelFile = "face-verdict.json"
    public static let cascadeModelFile = "face-confirm.json"

    public init(modelPath: String, networkPath: String = "") {
        self.modelPath = modelPath
        self.networkPath = networkPath
    }
}
