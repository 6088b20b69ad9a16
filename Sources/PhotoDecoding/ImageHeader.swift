/// What `probe` learns from a photo's header, without decoding pixels.
public struct ImageHeader: Sendable, Equatable, Codable {
    /// The format read from the file's signature.
    public let format: ImageFormat
    /// Stored width in pixels (before orientation).
    public let width: Int
    /// Stored height in pixels (before orientation).
    public let height: Int
    /// The EXIF orientation, `.up` when absent.
    public let orientation: Orientation
    /// The file's size in bytes.
    public let fileSize: Int
    /// A progressive JPEG: decoding it holds every DCT coefficient in memory, whatever the scale.
    public let progressive: Bool

    public init(format: ImageFormat, width: Int, height: Int, orientation: Orientation, fileSize: Int, progressive: Bool = false) {
        self.format = format
        self.width = width
        self.height = height
        self.orientation = orientation
        self.fileSize = fileSize
        self.progressive = progressive
    }

    /// Width and height once the photo stands upright.
    public var uprightSize: (width: Int, height: Int) {
        orientation.uprightSize(width: width, height: height)
    }

    /// Stored pixel count.
    public var pixelCount: Int { width * height }
}
