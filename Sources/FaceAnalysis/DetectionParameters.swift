/// How a cascade searches an image: the parameters of OpenCV's `detectMultiScale`, with the same
/// meaning and defaults.
public struct DetectionParameters: Sendable, Equatable, Codable {
    /// The ratio between successive pyramid levels; must be above 1 (1.1 = 10% steps).
    public var scaleFactor: Double
    /// A face is reported only where more than this many raw windows agree (0 = no grouping).
    public var minNeighbors: Int
    /// The smallest face, in pixels of the image searched; 0 means the cascade's window.
    public var minSize: Int
    /// The largest face, in pixels; 0 (or a value above the image) means no limit.
    public var maxSize: Int

    /// Parameters with OpenCV's defaults: 1.1, 3 neighbours, no size limits.
    public init(scaleFactor: Double = 1.1, minNeighbors: Int = 3, minSize: Int = 0, maxSize: Int = 0) {
        self.scaleFactor = scaleFactor
        self.minNeighbors = minNeighbors
        self.minSize = minSize
        self.maxSize = maxSize
    }

    /// Throws `invalidParameter` unless the scale factor is finite and above 1 and the other
    /// values are not negative.
    public func validate() throws(FaceAnalysisError) {
        guard scaleFactor.isFinite, scaleFactor > 1 else {
            throw FaceAnalysisError(.invalidParameter, "scale factor \(scaleFactor) must be a number above 1")
        }
        guard minNeighbors >= 0 else {
            throw FaceAnalysisError(.invalidParameter, "min neighbours \(minNeighbors) must not be negative")
        }
        guard minSize >= 0, maxSize >= 0 else {
            throw FaceAnalysisError(.invalidParameter, "min size \(minSize) and max size \(maxSize) must not be negative")
        }
    }
}
