import CHEIF
import CJPEG
import CPNG
import CWEBP

// Every call into libjpeg, libpng, libheif and libwebp goes through the classes in this file. Each owns its
// C decoder and frees it in deinit; the C shims catch the libraries' errors (with setjmp for
// libjpeg and libpng) and hand back a status and a message.

private let errorCapacity = 256

/// Runs `body` with a C buffer for an error message and returns the message it wrote.
private func withErrorBuffer<T>(_ body: (UnsafeMutablePointer<CChar>, Int) -> T) -> (T, String) {
    var buffer = [CChar](repeating: 0, count: errorCapacity)
    let result = buffer.withUnsafeMutableBufferPointer { body($0.baseAddress!, errorCapacity) }
    let message = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return (result, message)
}

/// How the four shims number their failures: alike (`pd_jpeg.h`, `pd_png.h`, `pd_heif.h`,
/// `pd_webp.h`), so one mapping to `DecodeError` serves them all.
private enum ShimStatus: Int32 {
    case ok = 0, open, decode, state, argument, noMemory, unsupported, limit
}

/// The error for a shim's failure `status`: a file that could not be opened is `unreadable`, a
/// misuse of the shim `invalidRequest`, a feature the library lacks `unsupportedFormat` (its
/// message after `unsupportedPrefix`), a refused size `tooLarge`, anything else `corrupt`.
private func decodeError(_ status: Int32, _ message: String, path: String?, unsupportedPrefix: String = "") -> DecodeError {
    switch ShimStatus(rawValue: status) {
    case .open: DecodeError(.unreadable, message, path: path)
    case .unsupported: DecodeError(.unsupportedFormat, unsupportedPrefix + message, path: path)
    case .limit: DecodeError(.tooLarge, message, path: path)
    case .argument, .state: DecodeError(.invalidRequest, message, path: path)
    default: DecodeError(.corrupt, message, path: path)
    }
}

/// An open C decoder: the shim's handle, the bytes it reads when they are in memory (kept alive
/// as long as it), the path it was opened at, and the shim's close, called in `deinit`. The one
/// shape of the four decoders' open and error.
private final class DecoderHandle {
    typealias FileOpen = (String, UnsafeMutablePointer<Int32>, UnsafeMutablePointer<CChar>, Int) -> OpaquePointer?
    typealias MemoryOpen = (UnsafePointer<UInt8>, Int, UnsafeMutablePointer<Int32>, UnsafeMutablePointer<CChar>, Int) -> OpaquePointer?

    let pointer: OpaquePointer
    let path: String?
    private let source: PhotoBytes?
    private let close: (OpaquePointer) -> Void
    private let unsupportedPrefix: String

    /// Opens the file at `path` with the shim's `open`; throws its failure as `decodeError`.
    init(path: String, open: FileOpen, close: @escaping (OpaquePointer) -> Void, unsupportedPrefix: String = "") throws(DecodeError) {
        var status: Int32 = 0
        let (handle, message) = withErrorBuffer { open(path, &status, $0, $1) }
        guard let handle else { throw decodeError(status, message, path: path, unsupportedPrefix: unsupportedPrefix) }
        (pointer, self.path, source, self.close, self.unsupportedPrefix) = (handle, path, nil, close, unsupportedPrefix)
    }

    /// Opens bytes in memory, which the decoder keeps alive (and reads, never copies) for its whole life.
    init(photo: PhotoBytes, open: MemoryOpen, close: @escaping (OpaquePointer) -> Void,
         unsupportedPrefix: String = "") throws(DecodeError) {
        var status: Int32 = 0
        let (handle, message) = withErrorBuffer { open(photo.base, photo.count, &status, $0, $1) }
        guard let handle else { throw decodeError(status, message, path: photo.path, unsupportedPrefix: unsupportedPrefix) }
        (pointer, path, source, self.close, self.unsupportedPrefix) = (handle, photo.path, photo, close, unsupportedPrefix)
    }

    deinit { close(pointer) }

    /// The error for a failed step of the decode.
    func error(_ status: Int32, _ message: String) -> DecodeError {
        decodeError(status, message, path: path, unsupportedPrefix: unsupportedPrefix)
    }
}

/// An open JPEG (libjpeg-turbo through the CJPEG shim) with its header read.
final class JPEGDecoder {
    private let decoder: DecoderHandle
    private var handle: OpaquePointer { decoder.pointer }

    /// Opens a file and reads its header.
    init(path: String) throws(DecodeError) {
        decoder = try DecoderHandle(path: path, open: { pd_jpeg_open_file($0, $1, $2, $3) }, close: { pd_jpeg_close($0) })
    }

    /// Reads a JPEG held in memory (a file `PhotoBytes.read` read whole, or a copy).
    init(photo: PhotoBytes) throws(DecodeError) {
        decoder = try DecoderHandle(photo: photo, open: { pd_jpeg_open_memory($0, $1, $2, $3, $4) }, close: { pd_jpeg_close($0) })
    }

    var width: Int { Int(pd_jpeg_get_header(handle).width) }
    var height: Int { Int(pd_jpeg_get_header(handle).height) }
    var progressive: Bool { pd_jpeg_get_header(handle).progressive != 0 }

    /// The orientation stored in the APP1 EXIF marker, `.up` when none. Read when the file is
    /// opened, because libjpeg releases its saved markers once decoding finishes.
    private(set) lazy var orientation: Orientation = readOrientation()

    private func readOrientation() -> Orientation {
        var length = 0
        guard let bytes = pd_jpeg_exif(handle, &length) else { return .up }
        return exifOrientation(UnsafeRawBufferPointer(start: bytes, count: length)) ?? .up
    }

    /// Decodes at scale 1/`denominator` to gray or RGB. Call once.
    func decode(denominator: Int, output: DecodeOptions.Output) throws(DecodeError) -> Image {
        _ = orientation
        var w: Int32 = 0, h: Int32 = 0, comps: Int32 = 0
        let (status, message) = withErrorBuffer {
            pd_jpeg_start(handle, Int32(denominator), output == .gray ? 1 : 0, &w, &h, &comps, $0, $1)
        }
        guard status == Int32(PD_JPEG_OK) else { throw decoder.error(status, message) }
        let width = Int(w), height = Int(h), components = Int(comps)
        var readStatus: Int32 = 0
        var readMessage = ""
        var raw = [UInt8](unsafeUninitializedCapacity: width * height * components) { buffer, count in
            (readStatus, readMessage) = withErrorBuffer {
                pd_jpeg_read(handle, buffer.baseAddress!, width * components, buffer.count, $0, $1)
            }
            count = buffer.count
        }
        guard readStatus == Int32(PD_JPEG_OK) else { throw decoder.error(readStatus, readMessage) }
        if components == 4 {
            raw = cmykToOutput(raw, pixels: width * height, output: output)
            return Image(width: width, height: height, channels: output.channels, pixels: raw)
        }
        return Image(width: width, height: height, channels: components, pixels: raw)
    }
}

/// Adobe-style (inverted) CMYK to gray or RGB; libjpeg cannot convert CMYK itself.
private func cmykToOutput(_ cmyk: [UInt8], pixels: Int, output: DecodeOptions.Output) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: pixels * output.channels)
    for i in 0..<pixels {
        let k = Int(cmyk[i * 4 + 3])
        let r = Int(cmyk[i * 4]) * k / 255, g = Int(cmyk[i * 4 + 1]) * k / 255, b = Int(cmyk[i * 4 + 2]) * k / 255
        if output == .gray {
            out[i] = UInt8((19595 * r + 38470 * g + 7471 * b + 32768) >> 16)
        } else {
            out[i * 3] = UInt8(r); out[i * 3 + 1] = UInt8(g); out[i * 3 + 2] = UInt8(b)
        }
    }
    return out
}

/// An open PNG (libpng through the CPNG shim) with the chunks before its image data read.
final class PNGDecoder {
    private let decoder: DecoderHandle
    private var handle: OpaquePointer { decoder.pointer }

    /// Opens a file and reads the chunks before its image data.
    init(path: String) throws(DecodeError) {
        decoder = try DecoderHandle(path: path, open: { pd_png_open_file($0, $1, $2, $3) }, close: { pd_png_close($0) })
    }

    /// Reads a PNG held in memory.
    init(photo: PhotoBytes) throws(DecodeError) {
        decoder = try DecoderHandle(photo: photo, open: { pd_png_open_memory($0, $1, $2, $3, $4) }, close: { pd_png_close($0) })
    }

    var width: Int { Int(pd_png_get_header(handle).width) }
    var height: Int { Int(pd_png_get_header(handle).height) }

    /// The orientation in the eXIf chunk, `.up` when none.
    var orientation: Orientation {
        var length = 0
        guard let bytes = pd_png_exif(handle, &length) else { return .up }
        return exifOrientation(UnsafeRawBufferPointer(start: bytes, count: length)) ?? .up
    }

    /// Decodes the whole image to 8-bit gray or RGB. Call once.
    func decode(output: DecodeOptions.Output) throws(DecodeError) -> Image {
        let width = self.width, height = self.height, channels = output.channels
        var status: Int32 = 0
        var message = ""
        let pixels = [UInt8](unsafeUninitializedCapacity: width * height * channels) { buffer, count in
            (status, message) = withErrorBuffer {
                pd_png_read(handle, output == .gray ? 1 : 0, buffer.baseAddress!, width * channels, buffer.count, $0, $1)
            }
            count = buffer.count
        }
        guard status == Int32(PD_PNG_OK) else { throw decoder.error(status, message) }
        return Image(width: width, height: height, channels: channels, pixels: pixels)
    }
}

/// An open HEIF file (libheif through the CHEIF shim) with its primary image's boxes read.
///
/// Sizes are as the image displays: libheif applies irot/imir (and clap) itself, and HEIF's rule
/// is that those boxes, not the EXIF orientation tag, say which way is up, so `orientation` is
/// always `.up` and EXIF is never applied on top.
final class HEIFDecoder {
    private let decoder: DecoderHandle
    private var handle: OpaquePointer { decoder.pointer }
    /// What a file libheif cannot decode is called, before libheif's own words.
    private static let unsupported = "libheif cannot decode this file: "

    /// Opens a file and reads its boxes.
    init(path: String) throws(DecodeError) {
        decoder = try DecoderHandle(path: path, open: { pd_heif_open_file($0, $1, $2, $3) }, close: { pd_heif_close($0) },
                                    unsupportedPrefix: Self.unsupported)
    }

    /// Reads a HEIF file held in memory.
    init(photo: PhotoBytes) throws(DecodeError) {
        decoder = try DecoderHandle(photo: photo, open: { pd_heif_open_memory($0, $1, $2, $3, $4) }, close: { pd_heif_close($0) },
                                    unsupportedPrefix: Self.unsupported)
    }

    private var header: pd_heif_header { pd_heif_get_header(handle) }
    /// Width as displayed (after irot/imir/clap).
    var width: Int { Int(header.width) }
    /// Height as displayed.
    var height: Int { Int(header.height) }
    /// The coded size ('ispe'), the buffer libheif allocates whatever the transformations.
    var codedWidth: Int { Int(header.coded_width) }
    var codedHeight: Int { Int(header.coded_height) }
    /// The largest embedded thumbnail's displayed size, nil when the file has none.
    var thumbnailSize: (width: Int, height: Int)? {
        header.thumbnail_width > 0 && header.thumbnail_height > 0
            ? (Int(header.thumbnail_width), Int(header.thumbnail_height)) : nil
    }

    /// Decodes the primary image, or its thumbnail when `thumbnail` is true, reduced by
    /// 1/`denominator` (box average) to gray (the codec's luma plane) or RGB. Call once.
    func decode(thumbnail: Bool, denominator: Int, output: DecodeOptions.Output,
                applyTransformations: Bool) throws(DecodeError) -> Image {
        var w: Int32 = 0, h: Int32 = 0, comps: Int32 = 0
        let (status, message) = withErrorBuffer {
            pd_heif_start(handle, thumbnail ? 1 : 0, Int32(denominator), output == .gray ? 1 : 0,
                          applyTransformations ? 0 : 1, &w, &h, &comps, $0, $1)
        }
        guard status == Int32(PD_HEIF_OK) else { throw decoder.error(status, message) }
        let width = Int(w), height = Int(h), components = Int(comps)
        var readStatus: Int32 = 0
        var readMessage = ""
        let pixels = [UInt8](unsafeUninitializedCapacity: width * height * components) { buffer, count in
            (readStatus, readMessage) = withErrorBuffer {
                pd_heif_read(handle, buffer.baseAddress!, width * components, buffer.count, $0, $1)
            }
            count = buffer.count
        }
        guard readStatus == Int32(PD_HEIF_OK) else { throw decoder.error(readStatus, readMessage) }
        return Image(width: width, height: height, channels: components, pixels: pixels)
    }

    /// The primary image's EXIF block from its TIFF header on (at most 1 MiB), nil when it has
    /// none or it is malformed.
    func exif() -> [UInt8]? {
        let capacity = 1 << 20
        var length = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            let n = pd_heif_exif(handle, buffer.baseAddress, buffer.count)
            length = n > 0 ? n : 0
            count = length
        }
        return length > 0 ? bytes : nil
    }
}

/// An open WebP (libwebp through the CWEBP shim): the whole file in memory, its header read.
/// WebP has no orientation PhotoDrain applies: an EXIF chunk, when present, is not read.
final class WebPDecoder {
    private let decoder: DecoderHandle
    private var handle: OpaquePointer { decoder.pointer }

    /// Reads a file (libwebp decodes from memory) and its header.
    init(path: String) throws(DecodeError) {
        decoder = try DecoderHandle(path: path, open: { pd_webp_open_file($0, $1, $2, $3) }, close: { pd_webp_close($0) })
    }

    /// Reads a WebP held in memory.
    init(photo: PhotoBytes) throws(DecodeError) {
        decoder = try DecoderHandle(photo: photo, open: { pd_webp_open_memory($0, $1, $2, $3, $4) }, close: { pd_webp_close($0) })
    }

    var width: Int { Int(pd_webp_get_header(handle).width) }
    var height: Int { Int(pd_webp_get_header(handle).height) }

    /// Decodes reduced by 1/`denominator` (libwebp's area-averaging rescaler, sizes rounded up as
    /// JPEG's are) to gray (full-range luma) or RGB. Call once.
    func decode(denominator: Int, output: DecodeOptions.Output) throws(DecodeError) -> Image {
        let width = scaledDimension(self.width, denominator: denominator)
        let height = scaledDimension(self.height, denominator: denominator)
        let channels = output.channels
        var status: Int32 = 0
        var message = ""
        let pixels = [UInt8](unsafeUninitializedCapacity: width * height * channels) { buffer, count in
            (status, message) = withErrorBuffer {
                pd_webp_decode(handle, output == .gray ? 1 : 0, Int32(width), Int32(height),
                               buffer.baseAddress!, width * channels, buffer.count, $0, $1)
            }
            count = buffer.count
        }
        guard status == Int32(PD_WEBP_OK) else { throw decoder.error(status, message) }
        return Image(width: width, height: height, channels: channels, pixels: pixels)
    }
}

/// Encoders for thumbnails and annotated pictures.
public enum ImageEncoder {
    /// A baseline JPEG of a gray or RGB image.
    public static func jpeg(_ image: Image, quality: Int = 85) throws(DecodeError) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let (status, message) = image.pixels.withUnsafeBufferPointer { pixels in
            withErrorBuffer {
                pd_jpeg_encode(pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(image.channels),
                               image.bytesPerRow, Int32(quality), &out, &length, $0, $1)
            }
        }
        guard status == Int32(PD_JPEG_OK), let out else { throw DecodeError(.invalidRequest, message) }
        defer { pd_jpeg_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }

    /// Writes a PNG file of a gray or RGB image.
    public static func writePNG(_ image: Image, to path: String) throws(DecodeError) {
        let (status, message) = image.pixels.withUnsafeBufferPointer { pixels in
            withErrorBuffer {
                pd_png_write_file(path, pixels.baseAddress, UInt32(image.width), UInt32(image.height),
                                  Int32(image.channels), image.bytesPerRow, $0, $1)
            }
        }
        guard status == Int32(PD_PNG_OK) else { throw DecodeError(.unreadable, message, path: path) }
    }
}
