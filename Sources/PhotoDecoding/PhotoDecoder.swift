/// Reads photo headers and decodes photos, JPEG and PNG, to upright gray or RGB pixels.
///
/// Every failure is a `DecodeError` for that one file: a corrupt, truncated, empty, mislabelled or
/// hostile file never stops the caller's batch.
public enum PhotoDecoder {
    /// Reads only the header: format (from the signature), stored size, EXIF orientation, file size.
    /// Throws `tooLarge` when the header claims more than `maxPixels`.
    public static func probe(_ path: String,
                             maxPixels: Int = DecodeOptions.defaultMaxPixels) throws(DecodeError) -> ImageHeader {
        let size = try FileSystem.fileSize(path)
        guard size > 0 else { throw DecodeError(.empty, "the file is empty", path: path) }
        let format = try sniff(path)
        let header: ImageHeader
        switch format {
        case .jpeg:
            let jpeg = try JPEGDecoder(path: path)
            header = ImageHeader(format: .jpeg, width: jpeg.width, height: jpeg.height,
                                 orientation: jpeg.orientation, fileSize: size, progressive: jpeg.progressive)
        case .png:
            let png = try PNGDecoder(path: path)
            header = ImageHeader(format: .png, width: png.width, height: png.height,
                                 orientation: png.orientation, fileSize: size)
        }
        try checkCeiling(width: header.width, height: header.height, maxPixels: maxPixels, path: path)
        return header
    }

    /// Decodes the photo at `path`. JPEG is DCT-scaled so its short side lands at or just above
    /// `options.targetShortSide`; the result is turned upright by the EXIF orientation.
    public static func decode(_ path: String, options: DecodeOptions = DecodeOptions()) throws(DecodeError) -> Image {
        let size = try FileSystem.fileSize(path)
        guard size > 0 else { throw DecodeError(.empty, "the file is empty", path: path) }
        switch try sniff(path) {
        case .jpeg: return try decodeJPEG(JPEGDecoder(path: path), options: options, path: path)
        case .png: return try decodePNG(PNGDecoder(path: path), options: options, path: path)
        }
    }

    /// Decodes a photo held in memory (used by the fuzzers and by tests).
    public static func decode(bytes: [UInt8], options: DecodeOptions = DecodeOptions()) throws(DecodeError) -> Image {
        guard !bytes.isEmpty else { throw DecodeError(.empty, "the input is empty") }
        switch ImageFormat.sniff(bytes) {
        case .jpeg: return try decodeJPEG(JPEGDecoder(bytes: bytes), options: options, path: nil)
        case .png: return try decodePNG(PNGDecoder(bytes: bytes), options: options, path: nil)
        case nil: throw DecodeError(.unsupportedFormat, "not a JPEG or PNG file")
        }
    }

    /// The JPEG scale denominator `decode` would use for a photo with this header.
    public static func scaleDenominator(for header: ImageHeader, targetShortSide: Int?) -> Int {
        header.format == .jpeg ? jpegScaleDenominator(width: header.width, height: header.height,
                                                       targetShortSide: targetShortSide) : 1
    }

    private static func sniff(_ path: String) throws(DecodeError) -> ImageFormat {
        let head = try FileSystem.leadingBytes(path, count: 8)
        guard let format = ImageFormat.sniff(head) else {
            throw DecodeError(.unsupportedFormat, "not a JPEG or PNG file", path: path)
        }
        return format
    }

    private static func checkCeiling(width: Int, height: Int, maxPixels: Int, path: String?) throws(DecodeError) {
        guard width > 0, height > 0 else {
            throw DecodeError(.corrupt, "the header gives an empty image (\(width)x\(height))", path: path)
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || pixels > maxPixels {
            throw DecodeError(.tooLarge,
                              "\(width)x\(height) is over the ceiling of \(maxPixels) pixels", path: path)
        }
    }

    private static func decodeJPEG(_ jpeg: JPEGDecoder, options: DecodeOptions, path: String?) throws(DecodeError) -> Image {
        try checkCeiling(width: jpeg.width, height: jpeg.height, maxPixels: options.maxPixels, path: path)
        let denominator = jpegScaleDenominator(width: jpeg.width, height: jpeg.height,
                                               targetShortSide: options.targetShortSide)
        let image = try jpeg.decode(denominator: denominator, output: options.output)
        return options.applyOrientation ? jpeg.orientation.apply(to: image) : image
    }

    private static func decodePNG(_ png: PNGDecoder, options: DecodeOptions, path: String?) throws(DecodeError) -> Image {
        try checkCeiling(width: png.width, height: png.height, maxPixels: options.maxPixels, path: path)
        let image = try png.decode(output: options.output)
        return options.applyOrientation ? png.orientation.apply(to: image) : image
    }
}
