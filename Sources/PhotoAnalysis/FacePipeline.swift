import FaceAnalysis
import Foundation
import PhotoDecoding
import SystemSupport

/// The analysis of one photo: probe, DCT-scaled decode at the scale the detector wants, the
/// detector (BlazeFace over a pyramid in colour, or a cascade on gray at the analysis size), the
/// linear classifier on each box, and the verdict with what the later stages need of the file: its
/// SHA-256, format, upright size and capture date (`AnalysedPhoto`), all read now, while it is
/// open for analysis. A photo whose analysis does not fit the memory budget is deferred, never
/// analysed at a smaller scale: a verdict does not depend on how much memory was free.
public struct FacePipeline: PhotoAnalyzing {
    public let settings: AnalysisSettings
    public let detector: FaceDetector
    public let classifier: FaceClassifier
    /// What turns the confirmed faces into descriptors for `people`; nil (the default until the
    /// descriptor network is in) banks the faces without embeddings.
    public var embedder: (any FaceEmbedder)?

    /// Loads the detector and the model; throws their errors (unreadable, malformed, mismatched).
    public init(settings: AnalysisSettings) throws {
        self.settings = settings
        let model = try LinearModel.load(settings.modelPath)
        switch settings.detector {
        case .blazeface:
            var options = BlazeFaceOptions()
            // A model that does not weigh second looks (one trained before them) is not made to pay for them.
            if !model.spec.groups.contains(.secondLook) { options.secondLookMinScore = .infinity }
            detector = .blazeFace(try BlazeFace(contentsOf: settings.networkPath, precision: settings.precision), options,
                                  minFaceSize: settings.minFaceSize)
        case .cascade:
            detector = .cascade(try CascadeClassifier(contentsOf: settings.cascadePath), settings.detection)
        }
        classifier = try FaceClassifier(model: model, networkPrecision: settings.precision)
        if let embeddingPath = settings.embeddingPath {
            embedder = DescriptorEmbedder(network: try FaceDescriptorNetwork(contentsOf: embeddingPath))
        }
    }

    /// The decoded image analysis searches and the faces in it (scored), for `detect`, `bench`
    /// and `analyze` alike. Throws the decoder's and the detector's errors.
    public func findFaces(in path: String, header: ImageHeader, targetShortSide: Int? = nil) throws -> (image: Image, faces: [Verdict.Face]) {
        try findFaces(decoded: PhotoDecoder.decode(path, options: decodeOptions(for: header, targetShortSide: targetShortSide)), header: header)
    }

    /// The same, for a photo read into memory (`PhotoBytes.read`).
    public func findFaces(in photo: PhotoBytes, header: ImageHeader, targetShortSide: Int? = nil) throws -> (image: Image, faces: [Verdict.Face]) {
        try findFaces(decoded: PhotoDecoder.decode(photo, options: decodeOptions(for: header, targetShortSide: targetShortSide)), header: header)
    }

    private func decodeOptions(for header: ImageHeader, targetShortSide: Int?) -> DecodeOptions {
        let target = targetShortSide ?? detector.decodeShortSide(for: header, cascadeShortSide: settings.analysisSize)
        return DecodeOptions(output: detector.wantsColour ? .rgb : .gray, targetShortSide: target, maxPixels: settings.maxPixels)
    }

    private func findFaces(decoded: Image, header: ImageHeader) throws -> (image: Image, faces: [Verdict.Face]) {
        let image = detector.wantsColour ? decoded : Resize.toAnalysisSize(decoded, shortSide: settings.analysisSize)
        let photoScale = Double(image.width) / Double(max(1, header.uprightSize.width))
        let regions = try detector.regions(in: image, photoScale: photoScale)
        return (image, try classifier.faces(in: image, regions: regions))
    }

    /// Drops the detector's idle buffers and has malloc return its free pages, so the resident set
    /// (the memory guard's measure of use) is what is live: after one 12 MP photo it would
    /// otherwise keep about 40 MB that the next photo reuses but the guard counts as taken.
    public func releaseIdleMemory() {
        detector.releaseIdleBuffers()
        SystemMemory.returnFreePages()
    }

    /// The estimated peak bytes of analysing a photo with `header`: the file read into memory,
    /// decoded at the scale the detector wants and searched as every photo is. Analysis uses no
    /// other scale, so this is what a memory budget must hold for the photo to be analysed at all.
    public func memoryNeed(for header: ImageHeader) -> Int {
        let natural = detector.decodeShortSide(for: header, cascadeShortSide: settings.analysisSize)
        let denominator = PhotoDecoder.scaleDenominator(for: header, targetShortSide: natural)
        return header.fileSize + AnalysisCost.estimatedBytes(width: header.width, height: header.height, denominator: denominator,
                                           progressive: header.decodesFullFrame, analysisShortSide: natural,
                                           channels: detector.wantsColour ? 3 : 1, integralImages: detector.kind == .cascade,
                                           detectorBytes: detector.memoryEstimate(for: header, decodedShortSide: natural))
    }

    /// Analyses the photo at `path` at the scale the detector wants, or defers it when that does
    /// not fit `memoryBudget`. A smaller scale would fit, but it finds fewer faces, and its verdict
    /// would be banked as if it were the photo's own and never redone.
    ///
    /// The file is read once (`PhotoBytes.read`, which keeps a read only when the file's stamp
    /// held still across it), after a header probe that tells whether it is a photo and what its
    /// analysis needs; the header, pixels, digest and capture date all come from those bytes, so a
    /// verdict never pairs one version's faces with another version's digest.
    public func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
        let clock = ContinuousClock()
        let start = clock.now
        func elapsed() -> Double { (clock.now - start).milliseconds }
        func deferral(_ header: ImageHeader) -> AnalysisResult? {
            guard let memoryBudget else { return nil }
            let needs = memoryNeed(for: header)
            guard needs > memoryBudget else { return nil }
            return .deferred(reason: "analysing \(header.width)x\(header.height) needs about \(AnalysisCost.mebibytes(needs)) MiB, more than the \(memoryBudget >> 20) MiB of headroom",
                             needs: needs)
        }
        var photo: PhotoBytes?
        do {
            // The header alone first: a file that is no photo, or too big for the budget, is not read whole.
            let probed = try PhotoDecoder.probe(path, maxPixels: settings.maxPixels)
            if let deferred = deferral(probed) { return deferred }
            let bytes = try PhotoBytes.read(path)
            photo = bytes
            let header = try PhotoDecoder.probe(bytes, maxPixels: settings.maxPixels)
            // Rewritten since the probe: what the bytes are decides.
            if header != probed, let deferred = deferral(header) { return deferred }
            let (image, faces) = try findFaces(in: bytes, header: header)
            let sha = try bytes.withUnsafeBytes { (raw) throws(SystemError) in SHA256.hex(try SHA256.digest(raw)) }
            let verdict = Verdict(faces: Self.recorded(faces), model: classifier.model.identifier, detector: detector.identifier,
                                  analysisSize: Verdict.Size(width: image.width, height: image.height), milliseconds: elapsed())
            let upright = header.uprightSize
            var analysed = AnalysedPhoto(verdict: verdict, sha256: sha, format: header.format,
                                         uprightSize: Verdict.Size(width: upright.width, height: upright.height),
                                         captureDate: CaptureDate.dateTimeOriginal(bytes))
            // A verdict that cannot be banked (a value not finite) is this photo's failure, not the runner's.
            // (Encoded again only then, for the encoder's own error.)
            if analysed.verdictJSON == nil { _ = try verdict.json() }
            analysed.faceEmbeddings = embedder.flatMap { Self.embeddings(by: $0, image: image, verdict: verdict) }
            return .verdict(analysed)
        } catch let error as DecodeError {
            return .verdict(Self.errorVerdict(code: error.code.rawValue, message: error.message, path: path, photo: photo, elapsed: elapsed(),
                                              unanalysable: Self.isUnanalysable(error, path: path)))
        } catch let error as FaceAnalysisError {
            return .verdict(Self.errorVerdict(code: "analysis-failed", message: error.description, path: path, photo: photo, elapsed: elapsed()))
        } catch let error as SystemError {
            return .verdict(Self.errorVerdict(code: "unreadable", message: error.description, path: path, photo: photo, elapsed: elapsed()))
        } catch {
            return .verdict(Self.errorVerdict(code: "analysis-failed", message: "\(error)", path: path, photo: photo, elapsed: elapsed()))
        }
    }

    /// The embeddings `embedder` gives the verdict's confirmed faces; nil when it has none to
    /// give or gives a count or a form clustering cannot use (`FaceEmbedding.dimension` finite
    /// Floats each).
    /// A face narrower than `FaceChip.minimumFaceSize` is not embedded (an empty array in its
    /// place: its descriptor would not tell who it is).
    static func embeddings(by embedder: any FaceEmbedder, image: Image, verdict: Verdict) -> [[Float]]? {
        let confirmed = verdict.faces.filter(\.confirmed)
        let big = confirmed.indices.filter { confirmed[$0].region.width >= FaceChip.minimumFaceSize }
        guard !big.isEmpty else { return nil }
        let embeddings = embedder.embeddings(image: image, faces: big.map { confirmed[$0] })
        guard embeddings.count == big.count,
              embeddings.allSatisfy({ $0.count == faceEmbeddingDimension && $0.allSatisfy(\.isFinite) }) else { return nil }
        var out = [[Float]](repeating: [], count: confirmed.count)
        for (embedding, index) in zip(embeddings, big) { out[index] = embedding }
        return out
    }

    /// The length of a face descriptor (dlib's ResNet: 128).
    public static let faceEmbeddingDimension = 128

    /// True when a decode error means the file is not a photo PhotoDrain analyses, rather than a
    /// broken photo: its name is no photo's (`notes.txt`, `IMG_0001.MOV`, whatever its bytes), or
    /// its bytes are a format `ForeignFormat` names (a QuickTime video called `.jpg`). A photo's
    /// name with bytes that are corrupt, truncated, empty or of no known format stays an
    /// undecodable photo, uploaded with its error as the verdict.
    static func isUnanalysable(_ error: DecodeError, path: String) -> Bool {
        if ImageFormat.fromExtension(of: path) == nil { return true }
        guard error.code == .unsupportedFormat, let file = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? file.close() }
        let head = (try? file.read(upToCount: ImageFormat.signatureLength)) ?? Data()
        return ForeignFormat.sniff([UInt8](head)) != nil
    }

    /// The boxes a verdict keeps: every confirmed face, and the rejected boxes a person might want
    /// to see (probability at least 0.05, the 8 strongest). BlazeFace proposes dozens of weak
    /// candidates per photo; recording them all would bloat every row and upload header.
    static func recorded(_ faces: [Verdict.Face]) -> [Verdict.Face] {
        let rejected = faces.filter { !$0.confirmed && $0.probability >= 0.05 }
            .sorted { $0.probability > $1.probability }.prefix(8)
        return faces.filter { $0.confirmed || rejected.contains($0) }
    }

    /// The terminal verdict of a photo that could not be analysed (`unanalysable` when the file
    /// is not a photo PhotoDrain analyses); an undecodable photo is still hashed when it can be
    /// read, so it uploads with its identity. An unanalysable file is not: it may be a video of
    /// gigabytes that is never sent, and an upload hashes a file that has no hash yet itself.
    /// Either keeps its capture date, read from the metadata alone, for the upload to send.
    /// `photo`: the file's bytes when they were read before the failure (hashed and read for the
    /// date from them, not from the file again).
    static func errorVerdict(code: String, message: String, path: String, photo: PhotoBytes? = nil, elapsed: Double,
                             unanalysable: Bool = false) -> AnalysedPhoto {
        let verdict = Verdict(failure: Verdict.Failure(code: code, message: message), milliseconds: elapsed, unanalysable: unanalysable)
        if let photo, !unanalysable {
            return AnalysedPhoto(verdict: verdict, sha256: try? photo.withUnsafeBytes { (raw) throws(SystemError) in SHA256.hex(try SHA256.digest(raw)) },
                                 captureDate: CaptureDate.dateTimeOriginal(photo))
        }
        return AnalysedPhoto(verdict: verdict, sha256: unanalysable ? nil : try? AnalysedPhoto.sha256(ofFile: path),
                             captureDate: AnalysedPhoto.captureDate(ofFile: path))
    }
}
