/// One face region found by a cascade, in pixel coordinates of the image that was searched.
public struct Detection: Sendable, Equatable, Hashable, Codable {
    /// Left edge.
    public var x: Int
    /// Top edge.
    public var y: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// How many raw windows were grouped into this box (OpenCV's `numDetections`); higher is
    /// more certain. 1 when grouping is off.
    public var neighbors: Int

    /// A box at (`x`, `y`) of `width` x `height` supported by `neighbors` raw windows.
    public init(x: Int, y: Int, width: Int, height: Int, neighbors: Int = 1) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.neighbors = neighbors
    }

    /// Intersection over union with `other`; 0 when either box is empty.
    public func intersectionOverUnion(_ other: Detection) -> Double {
        let ix = max(0, min(x + width, other.x + other.width) - max(x, other.x))
        let iy = max(0, min(y + height, other.y + other.height) - max(y, other.y))
        let intersection = Double(ix * iy)
        let union = Double(width * height + other.width * other.height) - intersection
        return union > 0 ? intersection / union : 0
    }

    /// The box scaled by `factor` about the origin (to map boxes from an analysis-size image back
    /// to the original photo), rounded to whole pixels.
    public func scaled(by factor: Double) -> Detection {
        Detection(x: Int((Double(x) * factor).rounded()), y: Int((Double(y) * factor).rounded()),
                  width: Int((Double(width) * factor).rounded()), height: Int((Double(height) * factor).rounded()),
                  neighbors: neighbors)
    }
}
