import Foundation
import PhotoDecoding

/// A small upright JPEG of a photo, for the report's contact sheet.
///
/// The photo is decoded to RGB by PhotoDecoder with JPEG's DCT scaling (so a 12 MP JPEG is read at
/// 1/4 or 1/8 of its size, never in full), turned upright by its EXIF orientation, shrunk by area
/// averaging to fit a `size` x `size` square, and encoded by libjpeg-turbo.
struct Thumbnail: Sendable, Equatable {
    /// Width in pixels.
    let width: Int
    /// Height in pixels.
    let height: Int
    /// The JPEG file's bytes.
    let jpeg: [UInt8]

    /// The thumbnail as a `data:` URI for an `<img src>`.
    var dataURI: String { "data:image/jpeg;base64," + Data(jpeg).base64EncodedString() }

    /// Makes the thumbnail of the photo at `path`, at most `size` pixels on its long side.
    /// Throws the photo's `DecodeError` when it cannot be read or decoded.
    static func make(path: String, size: Int, quality: Int = 82) throws(DecodeError) -> Thumbnail {
        let header = try PhotoDecoder.probe(path)
        let upright = header.uprightSize
        let long = max(upright.width, upright.height), short = min(upright.width, upright.height)
        // The short side the decoder must reach for the long side to reach `size`.
        let targetShort = long > 0 ? max(1, (size * short + long - 1) / long) : size
        let decoded = try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb, targetShortSide: targetShort))
        let image = shrink(decoded, toFit: size)
        return Thumbnail(width: image.width, height: image.height, jpeg: try ImageEncoder.jpeg(image, quality: quality))
    }

    /// `image` scaled down (never up) to fit a `size` x `size` square, keeping its aspect ratio;
    /// each output pixel is the mean of the source pixels it covers.
    static func shrink(_ image: Image, toFit size: Int) -> Image {
        let long = max(image.width, image.height)
        guard long > size, size > 0 else { return image }
        let width = max(1, (image.width * size + long / 2) / long)
        let height = max(1, (image.height * size + long / 2) / long)
        let channels = image.channels
        // Source columns [columnStart[x], columnStart[x + 1]) make output column x; rows likewise.
        let columnStart = (0...width).map { $0 * image.width / width }
        let rowStart = (0...height).map { $0 * image.height / height }
        return image.pixels.withUnsafeBufferPointer { source in
            Image(width: width, height: height, channels: channels) { out in
                var sums = [Int](repeating: 0, count: width * channels)
                for y in 0..<height {
                    for i in sums.indices { sums[i] = 0 }
                    for sy in rowStart[y]..<rowStart[y + 1] {
                        let row = sy * image.width * channels
                        for x in 0..<width {
                            for sx in columnStart[x]..<columnStart[x + 1] {
                                for c in 0..<channels { sums[x * channels + c] += Int(source[row + sx * channels + c]) }
                            }
                        }
                    }
                    let rows = rowStart[y + 1] - rowStart[y]
                    for x in 0..<width {
                        let count = rows * (columnStart[x + 1] - columnStart[x])
                        for c in 0..<channels {
                            out[(y * width + x) * channels + c] = UInt8(truncatingIfNeeded: (sums[x * channels + c] + count / 2) / count)
                        }
                    }
                }
            }
        }
    }
}
