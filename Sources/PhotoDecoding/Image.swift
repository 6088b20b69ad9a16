/// An 8-bit image: gray (one channel) or RGB (three), rows packed with no padding.
///
/// Pixels live in a Swift array, so an `Image` is a value: it can cross task boundaries freely and
/// copying is cheap until one side writes.
public struct Image: Sendable, Equatable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Channels per pixel: 1 for gray, 3 for RGB.
    public let channels: Int
    /// `height` rows of `width * channels` bytes.
    public var pixels: [UInt8]

    /// Bytes from one row to the next.
    @inlinable public var bytesPerRow: Int { width * channels }

    /// Wraps existing pixels; `pixels.count` must be `width * height * channels`.
    public init(width: Int, height: Int, channels: Int, pixels: [UInt8]) {
        precondition(width >= 0 && height >= 0 && (channels == 1 || channels == 3 || channels == 4))
        precondition(pixels.count == width * height * channels, "pixel count does not match geometry")
        self.width = width
        self.height = height
        self.channels = channels
        self.pixels = pixels
    }

    /// An image whose pixels are filled by `fill`, which receives the whole uninitialised buffer
    /// and must write every byte.
    public init(width: Int, height: Int, channels: Int,
                fill: (UnsafeMutableBufferPointer<UInt8>) throws -> Void) rethrows {
        let count = width * height * channels
        self.width = width
        self.height = height
        self.channels = channels
        self.pixels = try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            try fill(buffer)
            initialized = count
        }
    }

    /// A gray image filled with one value.
    public init(grayWidth width: Int, height: Int, value: UInt8 = 0) {
        self.init(width: width, height: height, channels: 1,
                  pixels: [UInt8](repeating: value, count: width * height))
    }

    /// The pixel value at (`x`, `y`) in `channel`.
    @inlinable public subscript(x: Int, y: Int, channel: Int = 0) -> UInt8 {
        get { pixels[(y * width + x) * channels + channel] }
        set { pixels[(y * width + x) * channels + channel] = newValue }
    }

    /// The BT.601 luma of an RGB image (the weights JPEG uses), or the image itself when gray.
    public func grayscale() -> Image {
        if channels == 1 { return self }
        let n = width * height
        let c = channels
        return pixels.withUnsafeBufferPointer { src in
            Image(width: width, height: height, channels: 1) { dst in
                for i in 0..<n {
                    let r = Int(src[i * c]), g = Int(src[i * c + 1]), b = Int(src[i * c + 2])
                    // 0.299, 0.587, 0.114 in 16-bit fixed point, rounded.
                    dst[i] = UInt8(truncatingIfNeeded: (19595 * r + 38470 * g + 7471 * b + 32768) >> 16)
                }
            }
        }
    }
}
