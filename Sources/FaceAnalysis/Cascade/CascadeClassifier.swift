import PhotoDecoding

/// A boosted cascade of Haar or LBP features, loaded from an OpenCV cascade XML file, that finds
/// objects (faces) the way OpenCV 4's `CascadeClassifier::detectMultiScale` does: the same image
/// pyramid, window grid, feature arithmetic and neighbour grouping, so it reports the same boxes.
///
/// A classifier is an immutable value and can be shared between tasks; each `detect` call works
/// in its own buffers (taken from a small pool of earlier calls' buffers, so pictures after the
/// first reuse memory instead of allocating it), so calls on different threads do not interfere.
public struct CascadeClassifier: Sendable {
    let model: CascadeModel
    /// The scanner's buffers derived from `model`, built once here and shared by every call.
    let tables: CascadeTables
    /// Scanners (and their buffers) reused from one `detect` call to the next.
    let scanners = ScannerPool()
    /// A short name for the cascade: the file name without directory or extension.
    public let identifier: String

    /// Loads the cascade at `path`. Throws `unreadable`, `malformedXML`, `invalidCascade` or
    /// `unsupportedCascade`, with the path attached.
    public init(contentsOf path: String) throws(FaceAnalysisError) {
        let bytes = try SystemCalls.readFile(path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let identifier = name.hasSuffix(".xml") ? String(name.dropLast(4)) : name
        do {
            try self.init(xml: bytes, identifier: identifier)
        } catch {
            throw error.about(path)
        }
    }

    /// Parses a cascade from the bytes of its XML file.
    public init(xml: [UInt8], identifier: String = "cascade") throws(FaceAnalysisError) {
        let root = try XMLReader.parse(xml)
        model = try CascadeLoader.model(from: root)
        tables = CascadeTables(model: model)
        self.identifier = identifier
    }

    /// Haar or LBP.
    public var featureType: FeatureType { model.featureType }
    /// The training window size: the smallest object the cascade can find.
    public var windowSize: (width: Int, height: Int) { (model.windowWidth, model.windowHeight) }
    /// The number of stages.
    public var stageCount: Int { model.stages.count }

    /// The objects in `image` (gray; colour is converted), grouped as `parameters` say, in the
    /// image's pixel coordinates and clipped to it. An empty image, one smaller than the window, or
    /// a minimum size larger than the image gives no detections. Throws `invalidParameter` for a
    /// scale factor not above 1 or negative sizes.
    public func detect(in image: Image, parameters: DetectionParameters = DetectionParameters()) throws(FaceAnalysisError) -> [Detection] {
        var timings = DetectionTimings()
        return try detect(in: image, parameters: parameters, timings: &timings)
    }

    /// `detect(in:parameters:)`, adding the time spent in each stage to `timings`.
    public func detect(in image: Image, parameters: DetectionParameters,
                       timings: inout DetectionTimings) throws(FaceAnalysisError) -> [Detection] {
        let raw = try candidates(in: image, parameters: parameters, timings: &timings)
        let start = SystemCalls.monotonicNanoseconds()
        let grouped = GroupRectangles.group(raw, groupThreshold: parameters.minNeighbors, eps: 0.2)
        let clipped = grouped.compactMap { clip($0, width: image.width, height: image.height) }
        timings.scanNanoseconds += SystemCalls.monotonicNanoseconds() - start
        return clipped
    }

    /// The pyramid scales OpenCV would search for an image of `width` x `height`: factors
    /// 1, f, f^2, ... whose rounded window lies within the min and max sizes and the image.
    func scales(width: Int, height: Int, parameters: DetectionParameters) throws(FaceAnalysisError) -> [Float] {
        try parameters.validate()
        let maxW = parameters.maxSize > 0 ? parameters.maxSize : width
        let maxH = parameters.maxSize > 0 ? parameters.maxSize : height
        var result: [Float] = []
        var factor = 1.0
        var steps = 0
        while true {
            let w = Int((Double(model.windowWidth) * factor).rounded(.toNearestOrEven))
            let h = Int((Double(model.windowHeight) * factor).rounded(.toNearestOrEven))
            if w > maxW || h > maxH || w > width || h > height { break }
            if w >= parameters.minSize && h >= parameters.minSize { result.append(Float(factor)) }
            factor *= parameters.scaleFactor
            steps += 1
            if steps > 100_000 {
                throw FaceAnalysisError(.invalidParameter, "scale factor \(parameters.scaleFactor) is too close to 1: over 100000 pyramid levels")
            }
        }
        return result
    }

    /// Every window the cascade accepts, before grouping, in OpenCV's order (level by level, row by
    /// row), in the image's coordinates.
    func candidates(in image: Image, parameters: DetectionParameters, timings: inout DetectionTimings,
                    vectorStages: Int? = nil) throws(FaceAnalysisError) -> [Detection] {
        let gray = image.grayscale()
        let levels = try scales(width: gray.width, height: gray.height, parameters: parameters)
        guard !levels.isEmpty else { return [] }
        // The default scanner is reused between calls; a test's choice of vector stages gets its own.
        let pooled = vectorStages == nil
        let scanner = (pooled ? scanners.take() : nil) ?? CascadeScanner(model: model, tables: tables, vectorStages: vectorStages)
        defer { if pooled { scanners.giveBack(scanner) } }
        var found: [Detection] = []
        func levelSize(_ scale: Float) -> (width: Int, height: Int) {
            (Int((Float(gray.width) / scale).rounded(.toNearestOrEven)),
             Int((Float(gray.height) / scale).rounded(.toNearestOrEven)))
        }
        // OpenCV splits every level into the same number of horizontal stripes, sized from the
        // first level's working width; rows past the last whole stripe are never scanned.
        let firstWorkingWidth = max(levelSize(levels[0]).width + 1 - model.windowWidth, 0)
        let stripes = (firstWorkingWidth + 31) / 32
        for scale in levels {
            let (levelWidth, levelHeight) = levelSize(scale)
            let step = scale >= 2 ? 1 : 2
            // Windows at x with x + window < level + 1, as OpenCV's working size and setWindow allow.
            let workingWidth = levelWidth + 1 - model.windowWidth
            var workingHeight = levelHeight + 1 - model.windowHeight
            guard workingWidth > 0, workingHeight > 0 else { continue }
            let stripeSize = max((workingHeight / step + stripes - 1) / stripes, 1) * step
            workingHeight = min(workingHeight, stripes * stripeSize)
            scanner.prepareLevel(gray, levelWidth: levelWidth, levelHeight: levelHeight, step: step, timings: &timings)
            let start = SystemCalls.monotonicNanoseconds()
            scanner.scanLevel(workingWidth: workingWidth, workingHeight: workingHeight,
                              step: step, scale: scale, into: &found)
            timings.scanNanoseconds += SystemCalls.monotonicNanoseconds() - start
        }
        return found
    }

    private func clip(_ d: Detection, width: Int, height: Int) -> Detection? {
        let x0 = max(d.x, 0), y0 = max(d.y, 0)
        let x1 = min(d.x + d.width, width), y1 = min(d.y + d.height, height)
        guard x1 > x0, y1 > y0 else { return nil }
        return Detection(x: x0, y: y0, width: x1 - x0, height: y1 - y0, neighbors: d.neighbors)
    }
}
