import PhotoDecoding

extension BlazeFace {
    /// The side of the second looks' network input: the face (48 or 32 px) with 40 px or more of
    /// context on each side. Measured on the labelled photos (`photodrain train --labelled`, held
    /// out by photo, 5 groupings): at 128 the verdict model's figures match 192's (precision 0.992
    /// against 0.990, recall 0.989 against 0.990, photo labels 0.983 against 0.978, nothing on
    /// animals or paintings) for 44% of the network work; at 96 it confirmed 4 boxes on animal
    /// photos and labelled 0.965 of photos right.
    static let secondLookSide = 128
    /// The face's width in each second look's input: the middle of the network's range (14 to 64),
    /// then smaller. Measured on the labelled photos (`photodrain train --labelled`, held out by
    /// photo, 5 groupings): with the 48 px look alone the verdict model confirmed 12 false faces on
    /// photos without people (photo labels 0.948), with the 32 px look added 5 (0.978; both with
    /// 192x192 looks); real faces keep their score at both sizes, a mountain ridge that looked like
    /// a face at one pyramid scale does not. A mirrored look and a 72 px look changed nothing in a
    /// re-fit of the same boxes.
    public static let secondLookWidths: [Float] = [48, 32]
    /// A candidate of a second look answers for the face when it overlaps the expected box this much.
    static let secondLookOverlap: Float = 0.4

    /// The network's scores for `face` (a BlazeFace box in `image`'s pixels) when it looks again at
    /// that face alone, once per `secondLookWidths`: the image resampled so the face is that wide at
    /// the centre of a square input of `secondLookSide`, wherever the pyramid happened to put it. A
    /// real face scores about the same or higher; many false boxes (a forehead above a face, a
    /// ridge, a painted face) score far lower, because the first score leaned on a tile edge, a
    /// pyramid scale or the context of a nearby real face. Costs one 128x128 network run per width (about 2.5 ms each with the resampling).
    public func secondLooks(at face: FaceCandidate, in image: Image) throws(FaceAnalysisError) -> [Float] {
        var scores: [Float] = []
        for width in Self.secondLookWidths {
            scores.append(try secondLook(at: face, in: image, faceWidth: width))
        }
        return scores
    }

    /// `detections` (found in `image`) as regions, each scoring `options.secondLookMinScore` or more
    /// with its second looks. A region with no pixel inside the image (a box moved off the photo's
    /// edge by wild keypoints) is left out: there is nothing of it to judge.
    public func regions(for detections: [BlazeFaceDetection], in image: Image,
                        options: BlazeFaceOptions) throws(FaceAnalysisError) -> [FaceRegion] {
        var regions: [FaceRegion] = []
        for detection in detections {
            var region = FaceRegion(detection)
            guard region.x < image.width, region.y < image.height, region.x + region.width > 0, region.y + region.height > 0 else { continue }
            if detection.face.score >= options.secondLookMinScore {
                region.secondLooks = try secondLooks(at: detection.face, in: image)
            }
            regions.append(region)
        }
        return regions
    }

    /// One second look with the face `faceWidth` pixels wide: the highest score of a candidate
    /// overlapping the expected box (IoU >= 0.4), 0 when there is none.
    func secondLook(at face: FaceCandidate, in image: Image, faceWidth: Float) throws(FaceAnalysisError) -> Float {
        let side = Self.secondLookSide
        let scale = faceWidth / face.width  // input pixels per image pixel
        // A box of no size, or one no image could hold (a broken network would give it), gets 0.
        guard face.width >= 0.5, face.height >= 0.5, face.width < 1e6, face.height < 1e6,
              face.xmin.isFinite, face.ymin.isFinite, image.width > 0, image.height > 0 else { return 0 }
        let centre = SIMD2<Float>((face.xmin + face.xmax) / 2, (face.ymin + face.ymax) / 2)
        let workspace = try borrowWorkspace(height: side, width: side, precision: secondLookPrecision)
        defer { returnWorkspace(workspace) }
        Self.fillResampled(workspace.input, side: side, from: image, centre: centre, scale: scale)
        workspace.run()
        guard let regressors = workspace.output("regressors"), let logits = workspace.output("classificators") else { return 0 }
        let found = BlazeFaceDecoding.decode(regressors: regressors.pointer, regressorStride: regressors.stride,
                                             logits: logits.pointer, logitStride: logits.stride,
                                             anchors: BlazeFaceDecoding.pixelAnchors(width: side, height: side),
                                             inputSize: 1, minScore: 0.001)
        let half = SIMD2<Float>(face.width, face.height) * scale / 2, middle = Float(side) / 2
        let expected = FaceCandidate(xmin: middle - half.x, ymin: middle - half.y, xmax: middle + half.x, ymax: middle + half.y,
                                     keypoints: [], score: 0)
        return found.filter { $0.intersectionOverUnion(expected) >= Self.secondLookOverlap }.map(\.score).max() ?? 0
    }

    /// Writes a `side` x `side` RGB input in -1...1 showing `image` around `centre` (image pixels)
    /// at `scale` input pixels per image pixel, by bilinear sampling; when shrinking, each input
    /// pixel averages up to 4x4 samples so fine texture does not alias. Outside the image is black.
    ///
    /// Each image row a sample reads is widened to Floats once, over the columns the samples span
    /// (`SecondLookRows`), and a sample's four pixels are read as vectors of four lanes (the fourth
    /// ignored). Each lane is the same chain of subtractions, multiplies and adds, in the same
    /// order, as the formula written per channel (`fillResampledPlainly`; SecondLookTests checks
    /// it bit for bit).
    static func fillResampled(_ input: UnsafeMutableBufferPointer<Float>, side: Int, from image: Image,
                              centre: SIMD2<Float>, scale: Float) {
        let samples = secondLookSamples(scale: scale)
        let origin = centre - Float(side) / 2 / scale  // image position of the input's top-left corner
        let xs = secondLookAxis(origin.x, image.width, side: side, samples: samples, scale: scale)
        let ys = secondLookAxis(origin.y, image.height, side: side, samples: samples, scale: scale)
        let norm = 1 / (127.5 * Float(samples * samples))
        let inside = xs.compactMap { $0 }
        let rows = SecondLookRows(image: image, first: inside.map(\.a).min() ?? 0, last: inside.map(\.b).max() ?? 0)
        // Each x sample's two pixels as offsets into a widened row, and the weight of the second.
        let left = xs.map { ($0?.a ?? rows.first) - rows.first }, right = xs.map { ($0?.b ?? rows.first) - rows.first }
        let weights = xs.map { $0?.weight ?? 0 }, valid = xs.map { $0 != nil }
        var row = [SIMD4<Float>](repeating: .zero, count: side)
        @inline(__always) func load(_ line: UnsafePointer<Float>, _ x: Int) -> SIMD4<Float> {
            UnsafeRawPointer(line + 3 * x).loadUnaligned(as: SIMD4<Float>.self)
        }
        for v in 0..<side {
            for u in 0..<side { row[u] = .zero }
            for j in 0..<samples {
                guard let y = ys[v * samples + j] else { continue }  // outside adds nothing: black
                let top = rows.widened(y.a), bottom = rows.widened(y.b)
                for u in 0..<side {
                    var sum = SIMD4<Float>(repeating: 0)
                    for i in 0..<samples {
                        let k = u * samples + i
                        guard valid[k] else { continue }
                        let a = left[k], b = right[k], weight = weights[k]
                        let upper = load(top, a) + (load(top, b) - load(top, a)) * weight
                        let lower = load(bottom, a) + (load(bottom, b) - load(bottom, a)) * weight
                        sum += upper + (lower - upper) * y.weight
                    }
                    row[u] += sum
                }
            }
            let out = input.baseAddress! + v * side * 3
            for u in 0..<side {
                out[3 * u] = row[u].x * norm - 1
                out[3 * u + 1] = row[u].y * norm - 1
                out[3 * u + 2] = row[u].z * norm - 1
            }
        }
    }

    /// Samples per input pixel along each axis at `scale`: 1 when enlarging, up to 4 when shrinking.
    static func secondLookSamples(scale: Float) -> Int { Int(min(4, max(1, (1 / scale).rounded(.up)))) }

    /// Every sample position along one axis of a second look starting at `start` (image pixels):
    /// its two neighbouring pixels and the weight of the second, or nil outside the image (pixel
    /// centres are at +0.5).
    static func secondLookAxis(_ start: Float, _ length: Int, side: Int, samples: Int,
                               scale: Float) -> [(a: Int, b: Int, weight: Float)?] {
        (0..<side * samples).map { k in
            let position = start + (Float(k / samples) + (Float(k % samples) + 0.5) / Float(samples)) / scale - 0.5
            guard position > -1, position < Float(length) else { return nil }
            let low = Int(position.rounded(.down))
            return (min(max(low, 0), length - 1), min(max(low + 1, 0), length - 1), position - Float(low))
        }
    }
}

/// The image rows a second look reads, widened to Floats over columns `first...last`, three per
/// pixel (a gray value repeated in each), with one Float of slack so a pixel loads as four lanes.
/// Two rows are kept, by the parity of their index: a sample reads rows y and y + 1 (or y twice at
/// the edge), and the rows only move down.
final class SecondLookRows {
    let image: Image
    let first: Int
    private let length: Int
    private let buffer: UnsafeMutablePointer<Float>
    private var held = [-1, -1]

    init(image: Image, first: Int, last: Int) {
        self.image = image
        self.first = first
        length = 3 * (max(last, first) - first + 1) + 1
        buffer = .allocate(capacity: 2 * length)
        buffer.initialize(repeating: 0, count: 2 * length)
    }

    deinit { buffer.deallocate() }

    /// Row `y` widened (converted now unless it is held already). Valid until the next call with
    /// a row of the same parity.
    func widened(_ y: Int) -> UnsafePointer<Float> {
        let slot = y & 1, target = buffer + slot * length
        guard held[slot] != y else { return UnsafePointer(target) }
        held[slot] = y
        let count = length - 1, channels = image.channels
        image.pixels.withUnsafeBufferPointer { pixels in
            let source = pixels.baseAddress! + (y * image.width + first) * channels
            switch channels {
            case 3:
                for i in 0..<count { target[i] = Float(source[i]) }
            case 1:
                for x in 0..<count / 3 {
                    let value = Float(source[x])
                    target[3 * x] = value; target[3 * x + 1] = value; target[3 * x + 2] = value
                }
            default:
                for x in 0..<count / 3 {
                    for c in 0..<3 { target[3 * x + c] = Float(source[x * channels + c]) }
                }
            }
        }
        return UnsafePointer(target)
    }
}
