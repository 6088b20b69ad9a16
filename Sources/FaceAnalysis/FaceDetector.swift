import PhotoDecoding

/// Which detector proposes face regions.
public enum DetectorKind: String, Sendable, CaseIterable, Codable {
    /// MediaPipe's BlazeFace full-range CNN over an image pyramid (the default).
    case blazeface
    /// An OpenCV cascade (Haar or LBP), box for box as OpenCV's detectMultiScale.
    case cascade
}

/// A loaded face detector with its search settings: proposes `FaceRegion`s in the pixels of the
/// image it is given. A value; share it between tasks freely.
public enum FaceDetector: Sendable {
    /// BlazeFace with its options; `minFaceSize` is in photo pixels, nil for
    /// `automaticMinFaceSize` of each photo (the options' own `minFaceSize` is then ignored).
    case blazeFace(BlazeFace, BlazeFaceOptions, minFaceSize: Int?)
    case cascade(CascadeClassifier, DetectionParameters)

    /// The detector's kind.
    public var kind: DetectorKind {
        switch self {
        case .blazeFace: return .blazeface
        case .cascade: return .cascade
        }
    }

    /// Names the exact detector in a verdict: the network's `name@sha8` or the cascade's file name.
    public var identifier: String {
        switch self {
        case let .blazeFace(network, _, _): return network.identifier
        case let .cascade(cascade, _): return cascade.identifier
        }
    }

    /// Drops buffers the detector keeps between searches (BlazeFace's idle activation buffers).
    public func releaseIdleBuffers() {
        if case let .blazeFace(network, _, _) = self { network.releaseIdleBuffers() }
    }

    /// Whether the detector wants colour (BlazeFace was trained on RGB; cascades read gray).
    public var wantsColour: Bool { kind == .blazeface }

    /// The smallest face BlazeFace looks for in a photo whose short side is `shortSide` pixels, when
    /// the user set none: a fortieth of the short side, at least 8 and at most 40 pixels (so a
    /// 12 MP photo is searched down to 40 px faces, a 600x400 one down to 10 px).
    public static func automaticMinFaceSize(shortSide: Int) -> Int {
        min(40, max(8, shortSide / 40))
    }

    /// The finest scale (decoded pixels per photo pixel) a photo needs so its smallest face reaches
    /// the network's comfortable size; the decoder may decode at or above it.
    public static func blazeFaceScale(minFaceSize: Int) -> Double {
        min(1, Double(BlazeFace.finestFace) / Double(max(1, minFaceSize)))
    }

    /// The smallest face searched in a photo whose short side is `shortSide` photo pixels (nil for a cascade).
    public func minFaceSize(photoShortSide shortSide: Int) -> Int? {
        guard case let .blazeFace(_, _, size) = self else { return nil }
        return size ?? Self.automaticMinFaceSize(shortSide: shortSide)
    }

    /// The face regions in `image`, strongest first for BlazeFace, in OpenCV's order for a cascade.
    /// `photoScale` is the image's pixels per photo pixel (after DCT scaling), so BlazeFace's
    /// minimum face, given in photo pixels, is searched for at the right size.
    public func regions(in image: Image, photoScale: Double = 1) throws(FaceAnalysisError) -> [FaceRegion] {
        switch self {
        case let .blazeFace(network, options, _):
            var scaled = options
            let photoShort = Int((Double(min(image.width, image.height)) / max(photoScale, 1e-6)).rounded())
            let minFace = minFaceSize(photoShortSide: photoShort) ?? options.minFaceSize
            scaled.minFaceSize = max(1, Int((Double(minFace) * photoScale).rounded()))
            return try network.regions(for: try network.detect(in: image, options: scaled), in: image, options: scaled)
        case let .cascade(cascade, parameters):
            return try cascade.detect(in: image, parameters: parameters).map {
                FaceRegion(x: $0.x, y: $0.y, width: $0.width, height: $0.height, neighbors: $0.neighbors,
                           detectorScore: Float($0.neighbors))
            }
        }
    }
}

extension FaceDetector {
    /// The short side, in decoded pixels, a photo with `header` should be decoded at (or just
    /// above: DCT scaling rounds up): BlazeFace's finest level for the photo's minimum face, or
    /// `cascadeShortSide` for a cascade.
    public func decodeShortSide(for header: ImageHeader, cascadeShortSide: Int) -> Int {
        let upright = header.uprightSize
        let short = min(upright.width, upright.height)
        guard let minFace = minFaceSize(photoShortSide: short) else { return cascadeShortSide }
        return max(1, Int((Double(short) * Self.blazeFaceScale(minFaceSize: minFace)).rounded(.up)))
    }

    /// What the detector holds besides the decoded photo while it searches a photo with `header`
    /// decoded to `decodedShortSide` (BlazeFace's buffers and pyramid; nothing extra for a cascade,
    /// whose cost the memory guard already counts). Analysis searches every photo with the same
    /// options whatever memory is free, so a verdict never depends on it.
    public func memoryEstimate(for header: ImageHeader, decodedShortSide: Int) -> Int {
        guard case let .blazeFace(network, options, _) = self else { return 0 }
        let upright = header.uprightSize
        let short = max(1, min(upright.width, upright.height))
        let scale = Double(decodedShortSide) / Double(short)
        let minFace = max(1, Int((Double(minFaceSize(photoShortSide: short) ?? options.minFaceSize) * scale).rounded()))
        return network.memoryEstimate(width: Int((Double(upright.width) * scale).rounded()),
                                      height: Int((Double(upright.height) * scale).rounded()), minFaceSize: minFace,
                                      tileSize: options.tileSize, maxUpscale: options.maxUpscale)
    }

    /// Decodes the photo at `path` as analysis does: upright, RGB at `decodeShortSide` for
    /// BlazeFace; gray, brought to `cascadeShortSide` for a cascade. Returns the image and its
    /// pixels per photo pixel. Throws the decoder's errors.
    public func decodeForDetection(path: String, maxPixels: Int = DecodeOptions.defaultMaxPixels,
                                   cascadeShortSide: Int = 480) throws(DecodeError) -> (image: Image, photoScale: Double) {
        let header = try PhotoDecoder.probe(path, maxPixels: maxPixels)
        let target = decodeShortSide(for: header, cascadeShortSide: cascadeShortSide)
        let decoded = try PhotoDecoder.decode(path, options: DecodeOptions(output: wantsColour ? .rgb : .gray,
                                                                           targetShortSide: target, maxPixels: maxPixels))
        let image = wantsColour ? decoded : Resize.toAnalysisSize(decoded, shortSide: cascadeShortSide)
        return (image, Double(image.width) / Double(max(1, header.uprightSize.width)))
    }
}
