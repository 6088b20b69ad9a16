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
    /// Each image row a sample reads is interpolated horizontally once, at every x sample
    /// (`SecondLookRows`), a pixel's three channels as the lanes of one vector (the fourth
    /// ignored); the vertical step and the sums read those. Each lane is the same chain of
    /// subtractions, multiplies and adds, in the same order, as the formula written per channel
    /// and per sample (`fillResampledPlainly`; SecondLookTests checks it bit for bit).
    static func fillResampled(_ input: UnsafeMutableBufferPointer<Float>, side: Int, from image: Image,
                              centre: SIMD2<Float>, scale: Float) {
        let samples = secondLookSamples(scale: scale)
        let origin = centre - Float(side) / 2 / scale  // image position of the input's top-left corner
        let xs = secondLookAxis(origin.x, image.width, side: side, samples: samples, scale: scale)
        let ys = secondLookAxis(origin.y, image.height, side: side, samples: samples, scale: scale)
        let norm = 1 / (127.5 * Float(samples * samples))
        let rows = SecondLookRows(image: image, xs: xs)
        var row = [SIMD4<Float>](repeating: .zero, count: side)
        row.withUnsafeMutableBufferPointer { row in
            for v in 0..<side {
                for u in 0..<side { row[u] = .zero }
                for j in 0..<samples {
                    guard let y = ys[v * samples + j] else { continue }  // outside adds nothing: black
                    let top = rows.interpolated(y.a), bottom = rows.interpolated(y.b)
                    for u in 0..<side {
                        var sum = SIMD4<Float>(repeating: 0)
                        for i in 0..<samples {
                            let k = u * samples + i
                            guard rows.inside(k) else { continue }
                            let upper = top[k], lower = bottom[k]
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

/// The image rows a second look reads, each interpolated horizontally at every x sample `k`:
/// `p(a) + (p(b) - p(a)) * weight` with the three channels in the first lanes (a gray value
/// repeated in each). The row is first widened to Floats over the columns the samples span, with
/// one Float of slack so a pixel loads as four lanes. Two rows are kept, by the parity of their
/// index: a sample reads rows y and y + 1 (or y twice at the edge), and the rows only move down.
final class SecondLookRows {
    private let image: Image
    private let first: Int
    private let count: Int
    private let left: [Int], right: [Int], weights: [Float], valid: [Bool]
    private let line: UnsafeMutablePointer<Float>
    private let lineLength: Int
    private let rows: UnsafeMutablePointer<SIMD4<Float>>
    private var held = [-1, -1]

    /// Rows for the x samples `xs` (`BlazeFace.secondLookAxis`: two pixels and a weight, or nil outside).
    init(image: Image, xs: [(a: Int, b: Int, weight: Float)?]) {
        let inside = xs.compactMap { $0 }
        let first = inside.map(\.a).min() ?? 0, last = inside.map(\.b).max() ?? 0
        self.image = image
        self.first = first
        count = xs.count
        left = xs.map { 3 * (($0?.a ?? first) - first) }
        right = xs.map { 3 * (($0?.b ?? first) - first) }
        weights = xs.map { $0?.weight ?? 0 }
        valid = xs.map { $0 != nil }
        lineLength = 3 * (max(last, first) - first + 1)
        line = .allocate(capacity: lineLength + 1)
        line.initialize(repeating: 0, count: lineLength + 1)
        rows = .allocate(capacity: 2 * count)
        rows.initialize(repeating: .zero, count: 2 * count)
    }

    deinit {
        line.deallocate()
        rows.deallocate()
    }

    /// Whether x sample `k` lies on the image (else it adds nothing).
    @inline(__always) func inside(_ k: Int) -> Bool { valid.withUnsafeBufferPointer { $0[k] } }

    /// Row `y` interpolated at every x sample (computed now unless it is held already). Valid
    /// until the next call with a row of the same parity.
    func interpolated(_ y: Int) -> UnsafePointer<SIMD4<Float>> {
        let slot = y & 1, target = rows + slot * count
        guard held[slot] != y else { return UnsafePointer(target) }
        held[slot] = y
        widen(y)
        let line = UnsafeRawPointer(self.line)
        left.withUnsafeBufferPointer { left in
            right.withUnsafeBufferPointer { right in
                weights.withUnsafeBufferPointer { weights in
                    valid.withUnsafeBufferPointer { valid in
                        for k in 0..<count where valid[k] {
                            let a = line.loadUnaligned(fromByteOffset: 4 * left[k], as: SIMD4<Float>.self)
                            let b = line.loadUnaligned(fromByteOffset: 4 * right[k], as: SIMD4<Float>.self)
                            target[k] = a + (b - a) * weights[k]
                        }
                    }
                }
            }
        }
        return UnsafePointer(target)
    }

    /// Row `y`'s pixels from column `first` as Floats, three per pixel.
    private func widen(_ y: Int) {
        let count = lineLength, channels = image.channels, target = line
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
    }
}
