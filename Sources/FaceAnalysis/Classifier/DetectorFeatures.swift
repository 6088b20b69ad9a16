import Foundation

/// The `detector` feature group: what the detector itself says about a box, which a face
/// classifier weighs far more reliably than pixels alone.
///
/// 1. the detector score as a logit, clipped to ±10 (a cascade's neighbour count is not a
///    probability: it gives 0 here);
/// 2. log2(1 + raw candidates blended into the box);
/// 3. pyramid levels that found it (0 when unknown);
/// 4. log2 of the box width over the frame's short side;
/// 5. eye distance over box width; 6-7. the nose tip's offset from the eyes' midpoint, across and
///    down, in eye distances; 8. the mouth's drop below the eyes, in eye distances; 9. the ear span
///    over the box width. 5-9 are 0 without keypoints (cascade boxes), and clipped to ±4.
public enum DetectorFeatures {
    /// How many values the group holds.
    public static let count = 9

    /// The group's values for `region` in a `frameWidth` x `frameHeight` frame.
    public static func compute(_ region: FaceRegion, frameWidth: Int, frameHeight: Int) -> [Float] {
        var out = [Float](repeating: 0, count: count)
        if region.keypoints != nil, region.detectorScore > 0, region.detectorScore < 1 {
            out[0] = logit(region.detectorScore)
        }
        out[1] = log2(1 + Float(max(region.neighbors, 0)))
        out[2] = Float(region.levels ?? 0)
        let short = Float(max(1, min(frameWidth, frameHeight)))
        out[3] = log2(max(Float(region.width), 1) / short)
        guard let k = region.keypoints, k.count >= 12 else { return out }
        let rightEye = SIMD2(k[0], k[1]), leftEye = SIMD2(k[2], k[3])
        let nose = SIMD2(k[4], k[5]), mouth = SIMD2(k[6], k[7])
        let rightEar = SIMD2(k[8], k[9]), leftEar = SIMD2(k[10], k[11])
        let eyeVector = leftEye - rightEye
        let eyes = max((eyeVector * eyeVector).sum().squareRoot(), 1e-3)
        let middle = (leftEye + rightEye) / 2
        func clip(_ v: Float) -> Float { min(max(v, -4), 4) }
        let width = max(Float(region.width), 1)
        out[4] = clip(eyes / width)
        out[5] = clip((nose.x - middle.x) / eyes)
        out[6] = clip((nose.y - middle.y) / eyes)
        out[7] = clip((mouth.y - middle.y) / eyes)
        let ears = leftEar - rightEar
        out[8] = clip((ears * ears).sum().squareRoot() / width)
        return out
    }

    /// The `secondLook` group's values for `region`: its second-look scores (face 48 and 32 px
    /// wide) as logits in -10...10, or -6 each when it got no second look.
    public static func secondLooks(_ region: FaceRegion) -> [Float] {
        let scores = region.secondLooks ?? []
        return (0..<BlazeFace.secondLookWidths.count).map { i in
            i < scores.count ? logit(scores[i]) : -6
        }
    }

    /// A probability as a logit, the probability kept within 1e-5 of 0 and 1 and the logit clipped to -10...10.
    static func logit(_ probability: Float) -> Float {
        let p = min(max(probability, 1e-5), 1 - 1e-5)
        return min(max(log(p / (1 - p)), -10), 10)
    }
}
