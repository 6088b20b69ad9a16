import Foundation

/// One face BlazeFace reports: a box and six keypoints (right eye, left eye, nose tip, mouth,
/// right ear tragion, left ear tragion, as MediaPipe orders them) with a score in 0...1.
///
/// Coordinates are in whatever frame the caller asked for: relative to the network input (0...1)
/// straight out of `BlazeFaceDecoding`, in image pixels once `BlazeFace` has mapped them back.
public struct FaceCandidate: Sendable, Equatable {
    public var xmin: Float
    public var ymin: Float
    public var xmax: Float
    public var ymax: Float
    /// (x, y) pairs, six of them.
    public var keypoints: [SIMD2<Float>]
    /// The sigmoid of the network's logit (for a merged detection, its strongest member's).
    public var score: Float

    public init(xmin: Float, ymin: Float, xmax: Float, ymax: Float, keypoints: [SIMD2<Float>], score: Float) {
        self.xmin = xmin
        self.ymin = ymin
        self.xmax = xmax
        self.ymax = ymax
        self.keypoints = keypoints
        self.score = score
    }

    public var width: Float { xmax - xmin }
    public var height: Float { ymax - ymin }

    /// Intersection over union; 0 when the boxes are disjoint or empty.
    public func intersectionOverUnion(_ other: FaceCandidate) -> Float {
        let ix0 = max(xmin, other.xmin), iy0 = max(ymin, other.ymin)
        let ix1 = min(xmax, other.xmax), iy1 = min(ymax, other.ymax)
        guard ix0 < ix1 && iy0 < iy1 else { return 0 }
        let intersection = (ix1 - ix0) * (iy1 - iy0)
        let area = max(width, 0) * max(height, 0) + max(other.width, 0) * max(other.height, 0)
        let union = area - intersection
        return union > 0 ? intersection / union : 0
    }

    /// The candidate with every coordinate mapped by `x * scale + offset`.
    func mapped(scale: SIMD2<Float>, offset: SIMD2<Float>) -> FaceCandidate {
        FaceCandidate(xmin: xmin * scale.x + offset.x, ymin: ymin * scale.y + offset.y,
                      xmax: xmax * scale.x + offset.x, ymax: ymax * scale.y + offset.y,
                      keypoints: keypoints.map { $0 * scale + offset }, score: score)
    }
}

/// How BlazeFace's raw outputs become faces, as MediaPipe's face_detection_full_range graph does
/// it: one anchor per cell of a 48x48 grid (stride 4 on the 192x192 input, fixed unit size,
/// centred at half a cell); regressors are offsets and sizes in input pixels; scores are logits,
/// clipped then passed through a sigmoid; overlapping detections are blended by weighted
/// non-maximum suppression.
public enum BlazeFaceDecoding {
    /// The anchors' centres, relative to the input, row by row.
    public static func anchors(inputSize: Int = 192, stride: Int = 4) -> [SIMD2<Float>] {
        let cells = inputSize / stride
        var out: [SIMD2<Float>] = []
        out.reserveCapacity(cells * cells)
        for y in 0..<cells {
            for x in 0..<cells {
                out.append(SIMD2((Float(x) + 0.5) / Float(cells), (Float(y) + 0.5) / Float(cells)))
            }
        }
        return out
    }

    /// The anchors of a `width` x `height` input (any size the network runs at), in input pixels:
    /// cell centres of the stride-4 grid. Decode with `inputSize: 1` to get pixel coordinates,
    /// since the regressors are in input pixels.
    public static func pixelAnchors(width: Int, height: Int, stride: Int = 4) -> [SIMD2<Float>] {
        var out: [SIMD2<Float>] = []
        out.reserveCapacity((width / stride) * (height / stride))
        for y in 0..<(height / stride) {
            for x in 0..<(width / stride) {
                out.append(SIMD2((Float(x) + 0.5) * Float(stride), (Float(y) + 0.5) * Float(stride)))
            }
        }
        return out
    }

    /// The probability of a logit, clipped to ±`clip` first as MediaPipe does.
    @inline(__always)
    public static func sigmoid(_ logit: Float, clip: Float = 80) -> Float {
        1 / (1 + exp(-min(max(logit, -clip), clip)))
    }

    /// Every anchor whose score exceeds `minScore`, decoded to input-relative coordinates; boxes
    /// that are not strictly positive in size are dropped. `regressors` holds 16 values per anchor
    /// (`regressorStride` apart), `logits` one (`logitStride` apart).
    public static func decode(regressors: UnsafePointer<Float>, regressorStride: Int,
                              logits: UnsafePointer<Float>, logitStride: Int,
                              anchors: [SIMD2<Float>], inputSize: Float = 192, minScore: Float) -> [FaceCandidate] {
        // A logit below this cannot pass minScore: skip the exp for the ~99% of anchors that fail.
        let minLogit = minScore > 0 && minScore < 1 ? log(minScore / (1 - minScore)) - 1e-4 : -.infinity
        var out: [FaceCandidate] = []
        for (i, anchor) in anchors.enumerated() {
            let logit = logits[i * logitStride]
            guard logit > minLogit else { continue }
            let score = sigmoid(logit)
            guard score > minScore else { continue }
            let r = regressors + i * regressorStride
            let cx = r[0] / inputSize + anchor.x, cy = r[1] / inputSize + anchor.y
            let w = r[2] / inputSize, h = r[3] / inputSize
            let candidate = FaceCandidate(
                xmin: cx - w / 2, ymin: cy - h / 2, xmax: cx + w / 2, ymax: cy + h / 2,
                keypoints: (0..<6).map { k in SIMD2(r[4 + 2 * k] / inputSize + anchor.x, r[5 + 2 * k] / inputSize + anchor.y) },
                score: score)
            guard candidate.xmax > candidate.xmin && candidate.ymax > candidate.ymin else { continue }
            out.append(candidate)
        }
        return out
    }

    /// MediaPipe's weighted non-maximum suppression: repeatedly take the highest-scoring remaining
    /// detection, gather every remaining one whose IoU with it exceeds `threshold` (itself
    /// included), and emit their score-weighted average box and keypoints with the top score.
    public static func weightedNonMaxSuppression(_ candidates: [FaceCandidate], threshold: Float = 0.3,
                                                 minScore: Float? = nil) -> [FaceCandidate] {
        // Stable sort by descending score, as Python's sorted(..., reverse=True) is.
        var remaining = candidates.indices.sorted { a, b in
            candidates[a].score != candidates[b].score ? candidates[a].score > candidates[b].score : a < b
        }
        var out: [FaceCandidate] = []
        while let top = remaining.first {
            let detection = candidates[top]
            if let minScore, detection.score < minScore { break }
            var merged: [Int] = []
            var rest: [Int] = []
            for index in remaining {
                if candidates[index].intersectionOverUnion(detection) > threshold { merged.append(index) } else { rest.append(index) }
            }
            if merged.isEmpty {
                out.append(detection)
                break
            }
            var total: Float = 0
            var box = SIMD4<Float>.zero
            var points = [SIMD2<Float>](repeating: .zero, count: detection.keypoints.count)
            for index in merged {
                let c = candidates[index]
                total += c.score
                box += SIMD4(c.xmin, c.ymin, c.xmax, c.ymax) * c.score
                for k in points.indices where k < c.keypoints.count { points[k] += c.keypoints[k] * c.score }
            }
            box /= total
            out.append(FaceCandidate(xmin: box[0], ymin: box[1], xmax: box[2], ymax: box[3],
                                     keypoints: points.map { $0 / total }, score: detection.score))
            remaining = rest
        }
        return out
    }
}
