import PhotoDecoding
import Synchronization

/// How `BlazeFace` searches a photo.
public struct BlazeFaceOptions: Sendable, Equatable {
    /// The smallest face to find, as its width in pixels of the image searched. Sets the finest
    /// pyramid level, which is most of the cost: halving it quadruples the work.
    public var minFaceSize: Int
    /// Candidates whose probability is below this are dropped before merging (MediaPipe's graph
    /// uses 0.5 to 0.6; the classifier decides afterwards, so a lower value trades time for recall).
    public var minScore: Float
    /// Overlapping candidates (IoU above this) are blended into one face.
    public var mergeThreshold: Float
    /// The largest tile side, a multiple of 32, that large levels are cut into (bounds memory:
    /// about 30 MB of activations at 512).
    public var tileSize: Int
    /// The most the finest level may enlarge the image (2: small photos are searched for faces
    /// down to 8 px).
    public var maxUpscale: Float = 2
    /// Boxes whose score reaches this get second looks (`BlazeFace.secondLooks`, two more network
    /// runs each), which the verdict model weighs; above 1, none do.
    public var secondLookMinScore: Float = 0.3

    /// The defaults: faces from `minFaceSize` up to the whole photo.
    public init(minFaceSize: Int = 40, minScore: Float = 0.1, mergeThreshold: Float = 0.3, tileSize: Int = 512) {
        self.minFaceSize = minFaceSize
        self.minScore = minScore
        self.mergeThreshold = mergeThreshold
        self.tileSize = tileSize
    }
}

/// Where one `BlazeFace.detect` call spent its time, in nanoseconds (for `photodrain bench`).
public struct BlazeFaceTimings: Sendable, Equatable {
    /// Building the pyramid's level images.
    public var pyramid: UInt64 = 0
    /// Filling network inputs and running the network, over every tile of every level.
    public var network: UInt64 = 0
    /// Decoding anchors and merging candidates.
    public var merge: UInt64 = 0
    /// Network inputs run, and their pixels.
    public var tiles = 0
    public var tilePixels = 0

    public init() {}
}

/// A face BlazeFace found in a photo, in the photo's pixels, with what a classifier may want to
/// know about how it was found.
public struct BlazeFaceDetection: Sendable, Equatable {
    /// The blended box, keypoints and top score, in image pixels.
    public var face: FaceCandidate
    /// How many raw candidates were blended into it (like a cascade's neighbours).
    public var support: Int
    /// How many pyramid levels contributed a candidate.
    public var levels: Int
    /// The network-input size of the strongest candidate (its box width, in network pixels).
    public var networkSize: Float

    /// The face box in PhotoDrain's convention (WIDER FACE's: hairline to chin, ear root to ear
    /// root), as x, y, width, height in image pixels. BlazeFace's boxes are squares from the brows
    /// to the chin, centred on the eyes and nose; against hand-labelled boxes (106 faces) the labels
    /// are 0.87 as wide, 1.13 as tall and centred 0.04 of the height higher. Across, a face turned
    /// aside is labelled from the ear root to the far edge, which sits about halfway between the
    /// box's centre and the midpoint of the two ear keypoints: centring there raised the mean IoU
    /// with the labels from 0.809 to 0.824 (fitted leaving each photo out) and took the turned
    /// faces in `kphotoalbum-pool.jpg` and `kphotoalbum-bar55.jpg` from IoU 0.43 to 0.59.
    public var faceBox: (x: Float, y: Float, width: Float, height: Float) {
        let w = face.width * 0.87, h = face.height * 1.13
        var cx = (face.xmin + face.xmax) / 2
        let cy = (face.ymin + face.ymax) / 2 - 0.04 * face.height
        if face.keypoints.count >= 6 {
            cx = (cx + (face.keypoints[4].x + face.keypoints[5].x) / 2) / 2
        }
        return (cx - w / 2, cy - h / 2, w, h)
    }
}

/// MediaPipe's BlazeFace full-range face detector, run by PhotoDrain's own network runner over an
/// image pyramid, so faces from `minFaceSize` pixels up to the whole photo are found.
///
/// The network finds faces about 14 to 64 pixels wide in its input. The finest level scales the
/// photo so `minFaceSize` becomes 16 pixels; each next level halves it (box filter), down to a
/// level where the photo's short side is 56 pixels, so a face filling the frame is found too.
/// Levels larger than a tile are cut into overlapping tiles (overlap 64 px, more than the largest
/// face a level answers for), and a candidate cut by an inner tile edge is left to the
/// neighbouring tile that holds it whole. All candidates are merged by weighted NMS.
///
/// Immutable and `Sendable`; concurrent `detect` calls each borrow their own activation buffers.
public final class BlazeFace: Sendable {
    /// The weights' identifier (`blazeface-full-range@sha8`).
    public let identifier: String
    let file: NetworkFile
    /// The arithmetic of the network's 1x1 convolutions (`NetworkPrecision`).
    public let precision: NetworkPrecision
    /// The precision of the second looks (`secondLooks`): fp32 unless `secondLookPrecision` says otherwise.
    public let secondLookPrecision: NetworkPrecision
    let calibration: NetworkCalibration?
    /// The plan for the network's own 192x192 input; other sizes share its packed weights.
    private let template: ConvolutionalNetwork
    private let plans = Mutex<[Int: ConvolutionalNetwork]>([:])
    /// Idle activation buffers, newest last, at most `idleLimit`; each serves any tile size (a
    /// 448x448 tile needs about 25 MB).
    private let idle = Mutex<[NetworkWorkspace]>([])
    static let idleLimit = 2
    /// What one `detect` call holds besides the photo, for memory budgets: the activation buffers
    /// of its largest tile (the plan for the network's own input, scaled by area) and the finest
    /// level's pixels. `width` x `height` is the image searched, `minFaceSize` in its pixels.
    public func memoryEstimate(width: Int, height: Int, minFaceSize: Int, channels: Int = 3,
                               tileSize: Int = BlazeFaceOptions().tileSize, maxUpscale: Float = 2) -> Int {
        let scale = Double(min(Self.finestFace / Float(max(1, minFaceSize)), maxUpscale))
        let levelWidth = Int((Double(width) * scale).rounded(.up)), levelHeight = Int((Double(height) * scale).rounded(.up))
        // A second look runs at its own size whatever the tiles were.
        let tileArea = max(Self.inputSide(min(levelWidth, tileSize)) * Self.inputSide(min(levelHeight, tileSize)),
                           Self.secondLookSide * Self.secondLookSide)
        let perPixel = Double(template.arenaFloats * 4) / Double(template.inputShape.height * template.inputShape.width)
        return Int(perPixel * Double(tileArea)) + levelWidth * levelHeight * channels
    }
    /// Network sizes (in input pixels) a level is trusted for: the network's range with a margin.
    /// A level other than the coarsest only answers for faces up to `largestFace`: larger ones are
    /// found at the next level, as faces of 16 to 32 pixels, where the network is surest.
    static let smallestFace: Float = 10
    static let largestFace: Float = 48
    /// The size the finest level gives a `minFaceSize` face.
    static let finestFace: Float = 16
    /// More than `largestFace`, so every face a level answers for is whole in some tile.
    static let tileOverlap = 64

    /// Loads the weights at `path` (a PDNN file, see `NetworkFile`) to run at `precision`; int8
    /// reads the calibration beside the weights
    /// (`NetworkCalibration.path(forWeights:)`). Throws what `NetworkFile.load` throws,
    /// `malformedModel` when the graph is not BlazeFace's (two outputs of 16 and 1 values per
    /// anchor) or the calibration is missing or measured on other weights.
    public convenience init(contentsOf path: String, precision: NetworkPrecision = BlazeFace.preferredPrecision) throws(FaceAnalysisError) {
        let file = try NetworkFile.load(path)
        let calibration = precision == .int8
            ? try NetworkCalibration.load(NetworkCalibration.path(forWeights: path), for: file) : nil
        do {
            try self.init(file: file, precision: precision, calibration: calibration)
        } catch {
            throw error.about(path)
        }
    }

    /// A detector over `file`'s network; see `init(contentsOf:)`. An int8 detector needs `calibration`.
    public init(file: NetworkFile, precision: NetworkPrecision = .fp32, calibration: NetworkCalibration? = nil) throws(FaceAnalysisError) {
        self.file = file
        identifier = file.identifier
        self.precision = precision
        self.secondLookPrecision = precision == .int8 ? Self.int8SecondLookPrecision : .fp32
        self.calibration = calibration
        let probe = try ConvolutionalNetwork(file: file, precision: precision, calibration: calibration)
        guard let r = probe.outputs["regressors"], let c = probe.outputs["classificators"],
              probe.layouts[r]?.channels == 16, probe.layouts[c]?.channels == 1, probe.inputShape.channels == 3 else {
            throw FaceAnalysisError(.malformedModel, "the network is not a BlazeFace detector (16 regressors and 1 score per anchor, RGB input)")
        }
        template = probe
        plans.withLock { $0[Self.key(probe.inputShape.height, probe.inputShape.width)] = probe }
    }

    static func key(_ height: Int, _ width: Int) -> Int { height << 16 | width }

    /// Faces in `image` (gray or RGB; gray is given to the network as three equal channels), in
    /// the image's pixels, strongest first. Throws `invalidParameter` for options out of range.
    public func detect(in image: Image, options: BlazeFaceOptions = BlazeFaceOptions()) throws(FaceAnalysisError) -> [BlazeFaceDetection] {
        var timings = BlazeFaceTimings()
        return try detect(in: image, options: options, timings: &timings)
    }

    /// `detect(in:options:)`, adding where the time went to `timings`.
    public func detect(in image: Image, options: BlazeFaceOptions,
                       timings: inout BlazeFaceTimings) throws(FaceAnalysisError) -> [BlazeFaceDetection] {
        guard options.minFaceSize >= 1, options.tileSize >= 96, options.tileSize % 32 == 0,
              options.minScore >= 0, options.minScore < 1, options.mergeThreshold > 0, options.mergeThreshold < 1 else {
            throw FaceAnalysisError(.invalidParameter, "BlazeFace options out of range: min face \(options.minFaceSize), tile \(options.tileSize) (a multiple of 32, at least 96), min score \(options.minScore), merge \(options.mergeThreshold)")
        }
        guard image.width > 0, image.height > 0 else { return [] }
        var raw: [(candidate: FaceCandidate, level: Int, networkSize: Float)] = []
        var clock = SystemCalls.monotonicNanoseconds()
        func lap() -> UInt64 {
            let now = SystemCalls.monotonicNanoseconds()
            defer { clock = now }
            return now - clock
        }
        let levels = Self.pyramid(for: image, minFaceSize: options.minFaceSize, maxUpscale: options.maxUpscale)
        timings.pyramid += lap()
        for (index, level) in levels.enumerated() {
            let coarsest = level.isCoarsest
            for tile in Self.tiles(width: level.image.width, height: level.image.height, tileSize: options.tileSize) {
                let found = try run(level.image, tile: tile, minScore: options.minScore, timings: &timings)
                timings.network += lap()
                for candidate in found {
                    let size = candidate.width
                    guard size >= Self.smallestFace, coarsest || size <= Self.largestFace else { continue }
                    // Mostly in the padding that rounds the tile up to the network's input size, or
                    // beyond the photo: less than 30% of its width or height on real pixels. A face
                    // cut by the photo's edge keeps it (even one mostly out of frame: the network
                    // boxes the whole face); a box the network put in the black padding does not.
                    let visibleX = min(candidate.xmax, Float(tile.width)) - max(candidate.xmin, 0)
                    let visibleY = min(candidate.ymax, Float(tile.height)) - max(candidate.ymin, 0)
                    guard visibleX >= 0.3 * candidate.width, visibleY >= 0.3 * candidate.height else { continue }
                    // Cut by an inner tile edge: the neighbouring tile holds this face whole.
                    if (tile.x > 0 && candidate.xmin < 1) || (tile.y > 0 && candidate.ymin < 1) ||
                        (tile.x + tile.width < level.image.width && candidate.xmax > Float(tile.width - 1)) ||
                        (tile.y + tile.height < level.image.height && candidate.ymax > Float(tile.height - 1)) {
                        continue
                    }
                    let scale = SIMD2<Float>(repeating: 1 / level.scale)
                    let offset = SIMD2<Float>(Float(tile.x), Float(tile.y)) * scale
                    raw.append((candidate.mapped(scale: scale, offset: offset), index, size))
                }
            }
        }
        defer { timings.merge += lap() }
        let merged = BlazeFaceDecoding.weightedNonMaxSuppression(raw.map(\.candidate), threshold: options.mergeThreshold)
        // Attribute raw candidates to the merged face they overlap most, for the classifier.
        return merged.map { face in
            let members = raw.filter { $0.candidate.intersectionOverUnion(face) > options.mergeThreshold }
            let strongest = members.max { $0.candidate.score < $1.candidate.score }
            return BlazeFaceDetection(face: face, support: max(members.count, 1), levels: max(Set(members.map(\.level)).count, 1),
                                      networkSize: strongest?.networkSize ?? face.width)
        }
    }

    /// One pyramid level: the image scaled by `scale` (levels after the first are box-halved).
    struct Level {
        var image: Image
        var scale: Float
        var isCoarsest: Bool
    }

    /// The levels for `image`: the finest makes a `minFaceSize` face `finestFace` pixels wide (at
    /// most twice the image's own size), each next halves, down to a short side of about 56.
    static func pyramid(for image: Image, minFaceSize: Int, maxUpscale: Float = 2) -> [Level] {
        let short = Float(min(image.width, image.height))
        let finest = min(finestFace / Float(minFaceSize), maxUpscale)
        let coarsest = min(56 / short, finest)
        var levels: [Level] = []
        var scale = finest
        var current = LevelResize.scaled(image, by: finest)
        while true {
            let last = scale / 2 < coarsest * 0.75 || min(current.width, current.height) < 64
            levels.append(Level(image: current, scale: Float(current.width) / Float(image.width), isCoarsest: last))
            if last { break }
            current = LevelResize.halved(current)
            scale /= 2
        }
        return levels
    }

    /// A tile of a level: its origin and size in level pixels (the network input is the size rounded
    /// up to a multiple of 32, the rest padded).
    struct Tile: Equatable {
        var x: Int
        var y: Int
        var width: Int
        var height: Int
    }

    /// Tiles covering a `width` x `height` level: one when it fits in `tileSize`, else the fewest
    /// tiles per axis that cover it with `tileOverlap` between neighbours, spread evenly, each at
    /// most `tileSize` (rounded up to a multiple of 32).
    static func tiles(width: Int, height: Int, tileSize: Int) -> [Tile] {
        func spans(_ length: Int) -> [(start: Int, length: Int)] {
            guard length > tileSize else { return [(0, length)] }
            let count = (length - tileOverlap + (tileSize - tileOverlap) - 1) / (tileSize - tileOverlap)
            let side = min(length, ((length + (count - 1) * tileOverlap + count - 1) / count + 31) / 32 * 32)
            return (0..<count).map { i in (count == 1 ? 0 : i * (length - side) / (count - 1), side) }
        }
        var result: [Tile] = []
        for y in spans(height) {
            for x in spans(width) {
                result.append(Tile(x: x.start, y: y.start, width: x.length, height: y.length))
            }
        }
        return result
    }

    /// The network input size for a tile: each side rounded up to a multiple of 32, at least 96.
    static func inputSide(_ side: Int) -> Int { max(96, (side + 31) / 32 * 32) }

    /// Runs the network on one tile of a level image; candidates in tile pixels.
    private func run(_ level: Image, tile: Tile, minScore: Float, timings: inout BlazeFaceTimings) throws(FaceAnalysisError) -> [FaceCandidate] {
        let height = Self.inputSide(tile.height), width = Self.inputSide(tile.width)
        timings.tiles += 1
        timings.tilePixels += height * width
        let workspace = try borrowWorkspace(height: height, width: width)
        defer { returnWorkspace(workspace) }
        Self.fill(workspace.input, width: width, height: height, from: level, tile: tile, kernels: workspace.kernels)
        workspace.run()
        guard let regressors = workspace.output("regressors"), let logits = workspace.output("classificators") else { return [] }
        return BlazeFaceDecoding.decode(regressors: regressors.pointer, regressorStride: regressors.stride,
                                        logits: logits.pointer, logitStride: logits.stride,
                                        anchors: BlazeFaceDecoding.pixelAnchors(width: width, height: height),
                                        inputSize: 1, minScore: minScore)
    }

    /// Writes the tile's pixels into the network input as RGB in -1...1; outside the image (the
    /// rounding up) is black, as MediaPipe's letterbox is.
    static func fill(_ input: UnsafeMutableBufferPointer<Float>, width: Int, height: Int, from image: Image, tile: Tile,
                     kernels: NetworkWorkspace.Kernels = .best) {
        let channels = image.channels, rows = kernels.imageRows
        image.pixels.withUnsafeBufferPointer { pixels in
            for y in 0..<height {
                let row = input.baseAddress! + y * width * 3
                guard y < tile.height else {
                    row.update(repeating: -1, count: width * 3)
                    continue
                }
                let source = pixels.baseAddress! + ((tile.y + y) * image.width + tile.x) * channels
                if channels == 3 {
                    rows.normalizedRow(source, into: row, count: tile.width * 3)
                } else if channels == 1 {
                    for x in 0..<tile.width {
                        let v = Float(source[x]) / 127.5 - 1
                        row[3 * x] = v; row[3 * x + 1] = v; row[3 * x + 2] = v
                    }
                } else {
                    for x in 0..<tile.width {
                        for c in 0..<3 { row[3 * x + c] = Float(source[x * channels + c]) / 127.5 - 1 }
                    }
                }
                if tile.width < width {
                    (row + tile.width * 3).update(repeating: -1, count: (width - tile.width) * 3)
                }
            }
        }
    }

    /// A workspace laid out for the plan of `height` x `width` at `precision` (the detector's own by default).
    func borrowWorkspace(height: Int, width: Int, precision wanted: NetworkPrecision? = nil) throws(FaceAnalysisError) -> NetworkWorkspace {
        let precision = wanted ?? precision
        let key = Self.key(height, width) | (precision == self.precision ? 0 : 1 << 40)
        let plan: ConvolutionalNetwork
        if let cached = plans.withLock({ $0[key] }) {
            plan = cached
        } else {
            plan = try ConvolutionalNetwork(file: file, inputSize: (height, width),
                                            sharingWeightsWith: precision == self.precision ? template : nil,
                                            precision: precision, calibration: calibration)
            plans.withLock { $0[key] = plan }
        }
        // Any idle workspace will do: it lays its buffers out for this plan, growing if needed.
        if let idleWorkspace = idle.withLock({ $0.popLast() }) {
            idleWorkspace.use(plan)
            return idleWorkspace
        }
        return NetworkWorkspace(network: plan)
    }

    /// Drops the idle activation buffers (each up to about 30 MB), so a memory-capped run can
    /// hand them back before it measures its headroom; the next `detect` allocates afresh.
    public func releaseIdleBuffers() {
        let dropped = idle.withLock { pool -> [NetworkWorkspace] in
            defer { pool.removeAll() }
            return pool
        }
        _ = dropped  // freed here, outside the lock
    }

    func returnWorkspace(_ workspace: NetworkWorkspace) {
        idle.withLock { pool in
            pool.append(workspace)
            if pool.count > Self.idleLimit { pool.removeFirst() }
        }
    }
}
