/// How to decode a photo.
public struct DecodeOptions: Sendable, Equatable {
    /// The pixel layout to produce.
    public enum Output: String, Sendable {
        /// 8-bit luma; for JPEG it comes straight from the Y channel, no colour conversion.
        case gray
        /// 8-bit RGB.
        case rgb

        var channels: Int { self == .gray ? 1 : 3 }
    }

    /// The default ceiling on a photo's stored pixel count: 150 megapixels, well above any camera
    /// (a 100 MP medium-format sensor fits) and far below a decompression bomb.
    public static let defaultMaxPixels = 150_000_000

    /// Gray or RGB.
    public var output: Output
    /// The short side to reach, at or just above, with JPEG's DCT scaling (1/1, 1/2, 1/4, 1/8);
    /// HEIF (from its thumbnail or a box mean) and WebP (libwebp's rescaler) reduce to the same
    /// sizes. nil decodes at full size. PNG has no scaled decode: it always decodes at full size.
    public var targetShortSide: Int?
    /// Photos whose header claims more pixels than this are refused before any pixel is allocated.
    public var maxPixels: Int
    /// Turn the pixels upright by the EXIF orientation; for HEIF by its irot/imir (and clap)
    /// boxes instead, EXIF being ignored there. false gives the pixels as stored (for HEIF, as
    /// coded, and never from the embedded thumbnail).
    public var applyOrientation: Bool

    public init(output: Output = .gray, targetShortSide: Int? = nil,
                maxPixels: Int = DecodeOptions.defaultMaxPixels, applyOrientation: Bool = true) {
        self.output = output
        self.targetShortSide = targetShortSide
        self.maxPixels = maxPixels
        self.applyOrientation = applyOrientation
    }
}

/// The JPEG scale denominator (1, 2, 4 or 8) whose output short side is the smallest one still at
/// or above `target`; 1 when even the full image is smaller. Sizes round up as libjpeg rounds them.
public func jpegScaleDenominator(width: Int, height: Int, targetShortSide target: Int?) -> Int {
    guard let target, target > 0 else { return 1 }
    let short = min(width, height)
    for denom in [8, 4, 2] where scaledDimension(short, denominator: denom) >= target {
        return denom
    }
    return 1
}

/// libjpeg's output size for `size` at scale 1/`denominator`: the quotient rounded up.
public func scaledDimension(_ size: Int, denominator: Int) -> Int {
    (size + denominator - 1) / denominator
}
