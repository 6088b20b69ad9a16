/// What analysing a photo costs in memory. The analysis knows its decode scale and its
/// detector's buffers, so the estimate lives beside it; the runners' memory guard compares it
/// with the headroom.
public enum AnalysisCost {
    /// The estimated peak bytes of analysing a photo decoded to `width` x `height` (stored size)
    /// at scale 1/`denominator`, analysed at `analysisShortSide`. Progressive JPEGs keep every
    /// DCT coefficient of the full image in memory whatever the scale, so they cost more; so does
    /// HEIF, decoded at full size (4:2:0 planes in the codec and in libheif) before it is reduced:
    /// pass `ImageHeader.decodesFullFrame` as `progressive`. `channels` is 3 for a colour decode
    /// (BlazeFace) and `detectorBytes` what the detector holds besides the image (BlazeFace's
    /// activation buffers). `integralImages` is for a cascade, which scans integral images of
    /// its pyramid; BlazeFace makes none.
    public static func estimatedBytes(width: Int, height: Int, denominator: Int, progressive: Bool = false,
                                      analysisShortSide: Int, channels: Int = 1, integralImages: Bool = true,
                                      detectorBytes: Int = 0) -> Int {
        let w = (width + denominator - 1) / denominator
        let h = (height + denominator - 1) / denominator
        let decoded = w * h * max(1, channels)    // gray or RGB output
        let turned = decoded                      // orientation copy
        let short = max(1, min(w, h))
        let scale = min(1.0, Double(analysisShortSide) / Double(short))
        let analysed = Int(Double(w) * scale * Double(h) * scale)
        let integrals = integralImages ? analysed * (4 + 8) * 2 : 0  // sum and squared sum, plus one pyramid level in flight
        let coefficients = progressive ? width * height * 3 : w * 16 * 3 * 2  // 4:2:0 = 1.5 comps x 2 bytes
        return decoded + turned + analysed * max(1, channels) + integrals + coefficients + detectorBytes + (1 << 20)
    }

    /// `bytes` in whole MiB, rounded up (for messages about what a photo needs).
    public static func mebibytes(_ bytes: Int) -> Int { (bytes + (1 << 20) - 1) >> 20 }
}
