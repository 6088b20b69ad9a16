/// What `probe` learns from a photo's header, without decoding pixels.
public struct ImageHeader: Sendable, Equatable, Codable {
    /// The format read from the file's signature.
    public let format: ImageFormat
    /// Stored width in pixels (before EXIF orientation; for HEIF, as displayed).
    public let width: Int
    /// Stored height in pixels (before EXIF orientation; for HEIF, as displayed).
    public let height: Int
    /// The EXIF orientation, `.up` when absent; always `.up` for HEIF, whose irot/imir boxes are
    /// applied by the decoder and whose EXIF orientation tag is ignored, as the HEIF standard says,
    /// and for WebP, whose EXIF chunk is not read.
    public let orientation: Orientation
    /// The file's size in bytes.
    public let fileSize: Int
    /// A progressive JPEG: decoding it holds every DCT coefficient in memory, whatever the scale.
    public let progressive: Bool
    /// A HEIF image's largest embedded thumbnail (as displayed), which `decode` uses instead of the
    /// primary image when it is big enough for the target; nil when there is none.
    public let thumbnail: PixelSize?

    public init(format: ImageFormat, width: Int, height: Int, orientation: Orientation, fileSize: Int,
                progressive: Bool = false, thumbnail: PixelSize? = nil) {
        self.format = format
        self.width = width
        self.height = height
        self.orientation = orientation
        self.fileSize = fileSize
        self.progressive = progressive
        self.thumbnail = thumbnail
    }

    /// Width and height once the photo stands upright.
    public var uprightSize: (width: Int, height: Int) {
        orientation.uprightSize(width: width, height: height)
    }

    /// Stored pixel count.
    public var pixelCount: Int { width * height }

    /// True when decoding holds the whole full-size image in memory whatever the scale asked for:
    /// a progressive JPEG (every DCT coefficient) or a HEIF image (HEVC and AV1 decode only at full
    /// size; the reduction happens afterwards).
    public var decodesFullFrame: Bool { progressive || format == .heif }
}

/// A width and a height in pixels.
public struct PixelSize: Sendable, Equatable, Codable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int

    /// A size of `width` x `height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}
