import Foundation
import PhotoDecoding

/// Turns a face region of a photo into the fixed-length Float32 vector the linear classifier reads.
///
/// The computation (spec version 1), for each region:
/// 1. The region is clamped to the image and resampled to `cropSize`×`cropSize` gray values
///    (0...255, not rounded) with a separable triangle filter whose support widens with the
///    shrink factor, so large boxes are averaged rather than aliased.
/// 2. `gradientHistogram`: central differences (edge pixels repeat), magnitude and unsigned
///    orientation; each pixel votes its magnitude into the two nearest of `orientationBins` bins of
///    its `cellSize` cell. The whole vector is L2 normalised (ε = 1), clipped at 0.2 and rescaled
///    to its pre-clip length (L2-Hys; the length is 1 for any textured crop, near 0 for a flat
///    one). It is unchanged by adding a constant to the crop and, up to ε, by scaling it.
/// 3. `intensity`: crop mean and standard deviation over 255. The deviation ignores a brightness
///    offset; the mean does not.
/// 4. `layout`: grid-cell means minus the crop mean, over max(deviation, 1): offset-invariant.
/// 5. `symmetry`: left-right differences of the layout cells, and the L1 distance between the
///    gradient histogram and its mirror image (cells flipped, orientation bins reflected).
/// 6. `geometry`: the unclamped box's centre and size as fractions of the frame's width and height.
/// 7. `frame`: mean and standard deviation of the whole gray frame over 255.
/// 8. `detector`: the detector's evidence for the box (see `DetectorFeatures`).
///
/// Colour images are reduced to BT.601 luma first, when a group reads pixels (the verdict model's
/// `detector` and `second-look` read none). Every step runs in a fixed order, so the same
/// pixels always give bit-identical features on the same build.
public struct Features: Sendable {
    /// The layout this extractor computes.
    public let spec: Spec

    /// An extractor for `spec`, whose detector scores (if it has any) come from BlazeFace at
    /// `networkPrecision`; throws `featureSpecMismatch` when this build does not compute the spec
    /// or it was fitted at another precision.
    public init(spec: Spec = .crop, networkPrecision: NetworkPrecision = BlazeFace.preferredPrecision) throws(FaceAnalysisError) {
        try spec.validate()
        try spec.validate(precision: networkPrecision)
        self.spec = spec
    }

    /// The feature vector of each region of `image`, in order. Throws `invalidRegion` for a region
    /// that is empty or lies wholly outside the image.
    public func extract(from image: Image, regions: [FaceRegion]) throws(FaceAnalysisError) -> [[Float]] {
        let gray = readsPixels ? image.grayscale() : nil
        let frame = gray.flatMap { spec.groups.contains(.frame) ? FrameStatistics($0) : nil }
        var vectors: [[Float]] = []
        vectors.reserveCapacity(regions.count)
        for region in regions {
            vectors.append(try extract(gray: gray, width: image.width, height: image.height, region: region, frame: frame))
        }
        return vectors
    }

    /// The feature vector of one region of `image`. Throws `invalidRegion` for a region that is
    /// empty or lies wholly outside the image.
    public func extract(from image: Image, region: FaceRegion) throws(FaceAnalysisError) -> [Float] {
        let gray = readsPixels ? image.grayscale() : nil
        let frame = gray.flatMap { spec.groups.contains(.frame) ? FrameStatistics($0) : nil }
        return try extract(gray: gray, width: image.width, height: image.height, region: region, frame: frame)
    }

    /// The feature vector of a training crop: the whole image is the region and the frame.
    public func extract(crop image: Image) throws(FaceAnalysisError) -> [Float] {
        try extract(from: image, region: .whole(width: image.width, height: image.height))
    }

    /// Whether any group reads pixels (of the crop or the whole frame), not only the box and what
    /// the detector said: without one, the image is never reduced to gray nor a crop resampled.
    var readsPixels: Bool { spec.groups.contains { $0.readsPixels } }

    /// One region's vector. `gray` is the frame in gray, nil when no group reads pixels (the
    /// vector then depends on the box alone); `width` x `height` is the frame's size.
    private func extract(gray: Image?, width frameWidth: Int, height frameHeight: Int, region: FaceRegion,
                         frame: FrameStatistics?) throws(FaceAnalysisError) -> [Float] {
        guard region.width > 0, region.height > 0 else {
            throw FaceAnalysisError(.invalidRegion, "region \(region.width)x\(region.height) is empty")
        }
        let left = max(region.x, 0), top = max(region.y, 0)
        let right = min(region.x + region.width, frameWidth), bottom = min(region.y + region.height, frameHeight)
        guard left < right, top < bottom else {
            throw FaceAnalysisError(.invalidRegion,
                                  "region at (\(region.x), \(region.y)) size \(region.width)x\(region.height) lies outside the \(frameWidth)x\(frameHeight) image")
        }
        var vector: [Float] = []
        vector.reserveCapacity(spec.dimension)
        // The crop and what is made of it, only for the groups that read them.
        var crop: [Float] = [], mean: Float = 0, deviation: Float = 0, histogram: [Float] = [], cells: [Float] = []
        if let gray, spec.groups.contains(where: \.readsCrop) {
            crop = Resampler.resample(gray, x: left, y: top, width: right - left, height: bottom - top, to: spec.cropSize)
            (mean, deviation) = Self.meanAndDeviation(crop)
            let needsHistogram = spec.groups.contains(.gradientHistogram) || spec.groups.contains(.symmetry)
            histogram = needsHistogram
                ? GradientHistogram.compute(crop, side: spec.cropSize, cellSize: spec.cellSize, bins: spec.orientationBins)
                : []
            cells = layout(crop, mean: mean, deviation: deviation)
        }
        for group in spec.groups {
            switch group {
            case .gradientHistogram:
                vector += histogram
            case .intensity:
                vector += [mean / 255, deviation / 255]
            case .layout:
                vector += cells
            case .symmetry:
                vector += symmetry(cells: cells, histogram: histogram)
            case .geometry:
                let width = Float(frameWidth), height = Float(frameHeight)
                vector += [(Float(region.x) + Float(region.width) / 2) / width,
                           (Float(region.y) + Float(region.height) / 2) / height,
                           Float(region.width) / width,
                           Float(region.height) / height]
            case .frame:
                // `frame` reads pixels, so its statistics were computed with the gray frame.
                let statistics = frame ?? FrameStatistics(mean: 0, deviation: 0)
                vector += [statistics.mean / 255, statistics.deviation / 255]
            case .detector:
                vector += DetectorFeatures.compute(region, frameWidth: frameWidth, frameHeight: frameHeight)
            case .secondLook:
                vector += DetectorFeatures.secondLooks(region)
            }
        }
        return vector
    }

    private func layout(_ crop: [Float], mean: Float, deviation: Float) -> [Float] {
        let side = spec.cropSize, grid = spec.layoutGrid, cell = side / grid
        let spread = max(deviation, 1)
        var cells = [Float](repeating: 0, count: grid * grid)
        for gy in 0..<grid {
            for gx in 0..<grid {
                var sum: Float = 0
                for y in gy * cell..<(gy + 1) * cell {
                    for x in gx * cell..<(gx + 1) * cell { sum += crop[y * side + x] }
                }
                cells[gy * grid + gx] = (sum / Float(cell * cell) - mean) / spread
            }
        }
        return cells
    }

    private func symmetry(cells: [Float], histogram: [Float]) -> [Float] {
        let grid = spec.layoutGrid
        var result: [Float] = []
        result.reserveCapacity(spec.count(of: .symmetry))
        for row in 0..<grid {
            for column in 0..<grid / 2 {
                result.append(abs(cells[row * grid + column] - cells[row * grid + grid - 1 - column]))
            }
        }
        let side = spec.cellsPerSide, bins = spec.orientationBins
        var distance: Float = 0
        for row in 0..<side {
            for column in 0..<side {
                let here = (row * side + column) * bins
                let mirrored = (row * side + side - 1 - column) * bins
                for bin in 0..<bins {
                    distance += abs(histogram[here + bin] - histogram[mirrored + bins - 1 - bin])
                }
            }
        }
        result.append(distance)
        return result
    }

    /// Mean and population standard deviation, two passes.
    static func meanAndDeviation(_ values: [Float]) -> (mean: Float, deviation: Float) {
        guard !values.isEmpty else { return (0, 0) }
        var sum: Float = 0
        for value in values { sum += value }
        let mean = sum / Float(values.count)
        var squares: Float = 0
        for value in values { squares += (value - mean) * (value - mean) }
        return (mean, (squares / Float(values.count)).squareRoot())
    }
}

/// Mean and standard deviation of a whole gray frame, summed in Double so a large frame loses nothing.
struct FrameStatistics {
    let mean: Float
    let deviation: Float

    init(mean: Float, deviation: Float) {
        self.mean = mean
        self.deviation = deviation
    }

    init(_ gray: Image) {
        let pixels = gray.pixels
        guard !pixels.isEmpty else {
            mean = 0
            deviation = 0
            return
        }
        var sum: Double = 0
        for pixel in pixels { sum += Double(pixel) }
        let average = sum / Double(pixels.count)
        var squares: Double = 0
        for pixel in pixels {
            let offset = Double(pixel) - average
            squares += offset * offset
        }
        mean = Float(average)
        deviation = Float((squares / Double(pixels.count)).squareRoot())
    }
}
