/// Reads photo headers and decodes photos, JPEG, PNG, HEIF and WebP, to upright gray or RGB pixels.
///
/// Every failure is a `DecodeError` for that one file: a corrupt, truncated, empty, mislabelled or
/// hostile file never stops the caller's batch.
public enum PhotoDecoder {
    /// Reads only the header: format (from the signature), stored size, EXIF orientation, file size.
    /// For HEIF the size is as displayed (irot/imir applied) and the orientation is `.up`.
    /// Throws `tooLarge` when the header claims more than `maxPixels`.
    public static func probe(_ path: String,
                             maxPixels: Int = DecodeOptions.defaultMaxPixels) throws(DecodeError) -> ImageHeader {
        let size = try FileSystem.fileSize(path)
        guard size > 0 else { throw DecodeError(.empty, "the file is empty", path: path) }
        let opened: Opened = switch try sniff(path) {
        case .jpeg: .jpeg(try JPEGDecoder(path: path))
        case .png: .png(try PNGDecoder(path: path))
        case .heif: .heif(try HEIFDecoder(path: path))
        case .webp: .webp(try WebPDecoder(path: path))
        }
        return try header(of: opened, fileSize: size, maxPixels: maxPixels, path: path)
    }

    /// Reads the header of a photo in memory, as `probe(_:maxPixels:)` reads a file's.
    public static func probe(_ photo: PhotoBytes,
                             maxPixels: Int = DecodeOptions.defaultMaxPixels) throws(DecodeError) -> ImageHeader {
        try header(of: try open(photo), fileSize: photo.count, maxPixels: maxPixels, path: photo.path)
    }

    /// One of the four decoders, its header read.
    private enum Opened {
        case jpeg(JPEGDecoder), png(PNGDecoder), heif(HEIFDecoder), webp(WebPDecoder)
    }

    /// Opens the decoder for a photo in memory by its signature.
    private static func open(_ photo: PhotoBytes) throws(DecodeError) -> Opened {
        guard photo.count > 0 else { throw DecodeError(.empty, photo.path == nil ? "the input is empty" : "the file is empty", path: photo.path) }
        let head = photo.slice(at: 0, count: ImageFormat.signatureLength)
        switch ImageFormat.sniff(head) {
        case .jpeg: return .jpeg(try JPEGDecoder(photo: photo))
        case .png: return .png(try PNGDecoder(photo: photo))
        case .heif: return .heif(try HEIFDecoder(photo: photo))
        case .webp: return .webp(try WebPDecoder(photo: photo))
        case nil: throw unsupported(head, path: photo.path)
        }
    }

    private static func header(of opened: Opened, fileSize size: Int, maxPixels: Int, path: String?) throws(DecodeError) -> ImageHeader {
        let header: ImageHeader
        switch opened {
        case .jpeg(let jpeg):
            header = ImageHeader(format: .jpeg, width: jpeg.width, height: jpeg.height,
                                 orientation: jpeg.orientation, fileSize: size, progressive: jpeg.progressive)
        case .png(let png):
            header = ImageHeader(format: .png, width: png.width, height: png.height,
                                 orientation: png.orientation, fileSize: size)
        case .heif(let heif):
            try checkCeiling(heif, maxPixels: maxPixels, path: path)
            header = ImageHeader(format: .heif, width: heif.width, height: heif.height, orientation: .up, fileSize: size,
                                 thumbnail: heif.thumbnailSize.map { PixelSize(width: $0.width, height: $0.height) })
        case .webp(let webp):
            header = ImageHeader(format: .webp, width: webp.width, height: webp.height, orientation: .up, fileSize: size)
        }
        try checkCeiling(width: header.width, height: header.height, maxPixels: maxPixels, path: path)
        return header
    }

    /// Decodes the photo at `path`. JPEG is DCT-scaled so its short side lands at or just above
    /// `options.targetShortSide`, HEIF is reduced by the same factors (from its embedded thumbnail
    /// when that is big enough) and WebP by libwebp's rescaler to the same sizes; the result is
    /// turned upright by the EXIF orientation, or for HEIF by its irot/imir boxes alone.
    public static func decode(_ path: String, options: DecodeOptions = DecodeOptions()) throws(DecodeError) -> Image {
        let size = try FileSystem.fileSize(path)
        guard size > 0 else { throw DecodeError(.empty, "the file is empty", path: path) }
        switch try sniff(path) {
        case .jpeg: return try decodeJPEG(JPEGDecoder(path: path), options: options, path: path)
        case .png: return try decodePNG(PNGDecoder(path: path), options: options, path: path)
        case .heif: return try decodeHEIF(HEIFDecoder(path: path), options: options, path: path)
        case .webp: return try decodeWebP(WebPDecoder(path: path), options: options, path: path)
        }
    }

    /// Decodes a photo held in memory (used by the fuzzers and by tests).
    public static func decode(bytes: [UInt8], options: DecodeOptions = DecodeOptions()) throws(DecodeError) -> Image {
        try decode(PhotoBytes(copying: bytes), options: options)
    }

    /// Decodes a photo in memory (`PhotoBytes.read` of a file, or a copy), as `decode(_:options:)`
    /// decodes a file.
    public static func decode(_ photo: PhotoBytes, options: DecodeOptions = DecodeOptions()) throws(DecodeError) -> Image {
        switch try open(photo) {
        case .jpeg(let jpeg): return try decodeJPEG(jpeg, options: options, path: photo.path)
        case .png(let png): return try decodePNG(png, options: options, path: photo.path)
        case .heif(let heif): return try decodeHEIF(heif, options: options, path: photo.path)
        case .webp(let webp): return try decodeWebP(webp, options: options, path: photo.path)
        }
    }

    /// The scale denominator `decode` would use for a photo with this header: JPEG's DCT scale,
    /// the box reduction of HEIF's full-size decode, or WebP's rescale. For a HEIF image that
    /// `decodesThumbnail` this still describes the primary image, so a memory estimate from it
    /// errs high.
    public static func scaleDenominator(for header: ImageHeader, targetShortSide: Int?) -> Int {
        switch header.format {
        case .jpeg, .heif, .webp: jpegScaleDenominator(width: header.width, height: header.height, targetShortSide: targetShortSide)
        case .png: 1
        }
    }

    /// The embedded thumbnail `decode` would use instead of a HEIF primary image for this target,
    /// and the reduction it would get; nil when the primary image is decoded.
    public static func thumbnailPlan(for header: ImageHeader, targetShortSide: Int?) -> (thumbnail: PixelSize, denominator: Int)? {
        guard header.format == .heif, let thumbnail = header.thumbnail else { return nil }
        let plan = heifPlan(width: header.width, height: header.height,
                            thumbnail: (thumbnail.width, thumbnail.height), targetShortSide: targetShortSide)
        return plan.useThumbnail ? (thumbnail, plan.denominator) : nil
    }

    private static func sniff(_ path: String) throws(DecodeError) -> ImageFormat {
        let head = try FileSystem.leadingBytes(path, count: ImageFormat.signatureLength)
        guard let format = ImageFormat.sniff(head) else { throw unsupported(head, path: path) }
        return format
    }

    /// The error for bytes that are no format PhotoDrain decodes, naming what they are when known.
    private static func unsupported(_ head: [UInt8], path: String?) -> DecodeError {
        guard let foreign = ForeignFormat.sniff(head) else {
            return DecodeError(.unsupportedFormat, "not a JPEG, PNG, HEIF or WebP file", path: path)
        }
        return DecodeError(.unsupportedFormat, "\(foreign.summary), not a photo format PhotoDrain decodes (JPEG, PNG, HEIF, WebP)", path: path)
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

    private static func decodeWebP(_ webp: WebPDecoder, options: DecodeOptions, path: String?) throws(DecodeError) -> Image {
        try checkCeiling(width: webp.width, height: webp.height, maxPixels: options.maxPixels, path: path)
        let denominator = jpegScaleDenominator(width: webp.width, height: webp.height, targetShortSide: options.targetShortSide)
        return try webp.decode(denominator: denominator, output: options.output)
    }

    /// The ceiling applies to the coded size too: libheif allocates that before it crops.
    private static func checkCeiling(_ heif: HEIFDecoder, maxPixels: Int, path: String?) throws(DecodeError) {
        try checkCeiling(width: heif.width, height: heif.height, maxPixels: maxPixels, path: path)
        if heif.codedWidth > 0, heif.codedHeight > 0 {
            try checkCeiling(width: heif.codedWidth, height: heif.codedHeight, maxPixels: maxPixels, path: path)
        }
    }

    private static func decodeHEIF(_ heif: HEIFDecoder, options: DecodeOptions, path: String?) throws(DecodeError) -> Image {
        try checkCeiling(heif, maxPixels: options.maxPixels, path: path)
        // Stored pixels are asked for by the primary image alone: a thumbnail's boxes may differ.
        let plan = heifPlan(width: heif.width, height: heif.height,
                            thumbnail: options.applyOrientation ? heif.thumbnailSize : nil,
                            targetShortSide: options.targetShortSide)
        return try heif.decode(thumbnail: plan.useThumbnail, denominator: plan.denominator, output: options.output,
                               applyTransformations: options.applyOrientation)
    }
}

/// How to decode a HEIF image of `width` x `height` (as displayed) for `targetShortSide`: from its
/// embedded thumbnail when one of the same shape is at least that big (sparing the full-size HEVC
/// decode), else from the primary image; either way reduced by the largest of 1/1..1/8 that keeps
/// the short side at or above the target.
public func heifPlan(width: Int, height: Int, thumbnail: (width: Int, height: Int)?,
                     targetShortSide target: Int?) -> (useThumbnail: Bool, denominator: Int) {
    if let target, target > 0, let thumbnail, min(thumbnail.width, thumbnail.height) >= target,
       abs(thumbnail.width * height - thumbnail.height * width) * 100 <= thumbnail.height * width {
        // Same aspect ratio within 1%: a thumbnail padded or cropped to another shape is not used.
        return (true, jpegScaleDenominator(width: thumbnail.width, height: thumbnail.height, targetShortSide: target))
    }
    return (false, jpegScaleDenominator(width: width, height: height, targetShortSide: target))
}
