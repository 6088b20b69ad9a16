import AssetStore
import FaceAnalysis
import Foundation
import PhotoDecoding
import Transfer

/// Where the analysis finds its detector and model, and how it looks for faces.
public struct AnalysisSettings: Sendable {
    /// Which detector proposes the boxes.
    public var detector: DetectorKind = .blazeface
    /// BlazeFace's weights (`Scripts/convert-blazeface` writes them).
    public var networkPath: String
    /// The smallest face BlazeFace looks for, in photo pixels; nil for a fortieth of each photo's
    /// short side, between 8 and 40 pixels (`FaceDetector.automaticMinFaceSize`).
    public var minFaceSize: Int?
    /// The short side photos are analysed at by a cascade.
    public var analysisSize = 480
    /// OpenCV cascade XML (Debian's opencv-data installs these).
    public var cascadePath = AnalysisSettings.defaultCascade
    /// The classifier that decides each box (`photodrain train` writes one).
    public var modelPath: String
    public var detection = DetectionParameters(scaleFactor: 1.1, minNeighbors: 3, minSize: 24)
    /// Refuse photos whose header claims more pixels.
    public var maxPixels = DecodeOptions.defaultMaxPixels

    public static let defaultCascade = "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml"
    /// The shipped files: BlazeFace's weights, the verdict model for its boxes, and the older model
    /// for cascade boxes.
    public static let networkFile = "blazeface-full-range.pdnn"
    public static let verdictModelFile = "face-verdict.json"
    public static let cascadeModelFile = "face-confirm.json"

    public init(modelPath: String, networkPath: String = "") {
        self.modelPath = modelPath
        self.networkPath = networkPath
    }

    /// A shipped model file where `ModelSearch.current` finds it; nil when it is nowhere.
    public static func locateDefaultModel(_ file: String = cascadeModelFile) -> String? {
        ModelSearch.current.locate(file)
    }
}

/// The analysis of one photo: probe, DCT-scaled decode at the scale the detector wants, the
/// detector (BlazeFace over a pyramid in colour, or a cascade on gray at the analysis size), the
/// linear classifier on each box, and the verdict with the file's SHA-256. A photo whose analysis
/// does not fit the memory budget is deferred, never analysed at a smaller scale: a verdict does
/// not depend on how much memory was free.
public struct FacePipeline: PhotoAnalyzing {
    public let settings: AnalysisSettings
    public let detector: FaceDetector
    public let classifier: FaceClassifier

    /// Loads the detector and the model; throws their errors (unreadable, malformed, mismatched).
    public init(settings: AnalysisSettings) throws {
        self.settings = settings
        let model = try LinearModel.load(settings.modelPath)
        switch settings.detector {
        case .blazeface:
            var options = BlazeFaceOptions()
            // A model that does not weigh second looks (one trained before them) is not made to pay for them.
            if !model.spec.groups.contains(.secondLook) { options.secondLookMinScore = .infinity }
            detector = .blazeFace(try BlazeFace(contentsOf: settings.networkPath), options, minFaceSize: settings.minFaceSize)
        case .cascade:
            detector = .cascade(try CascadeClassifier(contentsOf: settings.cascadePath), settings.detection)
        }
        classifier = try FaceClassifier(model: model)
    }

    /// The decoded image analysis searches and the faces in it (scored), for `detect`, `bench`
    /// and `analyze` alike. Throws the decoder's and the detector's errors.
    public func findFaces(in path: String, header: ImageHeader, targetShortSide: Int? = nil) throws -> (image: Image, faces: [Verdict.Face]) {
        let target = targetShortSide ?? detector.decodeShortSide(for: header, cascadeShortSide: settings.analysisSize)
        let decoded = try PhotoDecoder.decode(path, options: DecodeOptions(output: detector.wantsColour ? .rgb : .gray,
                                                                           targetShortSide: target, maxPixels: settings.maxPixels))
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

    /// The estimated peak bytes of analysing a photo with `header`: decoded at the scale the
    /// detector wants and searched as every photo is. Analysis uses no other scale, so this is
    /// what a memory budget must hold for the photo to be analysed at all.
    public func memoryNeed(for header: ImageHeader) -> Int {
        let natural = detector.decodeShortSide(for: header, cascadeShortSide: settings.analysisSize)
        let denominator = PhotoDecoder.scaleDenominator(for: header, targetShortSide: natural)
        return MemoryGuard.estimatedCost(width: header.width, height: header.height, denominator: denominator,
                                         progressive: header.decodesFullFrame, analysisShortSide: natural,
                                         channels: detector.wantsColour ? 3 : 1, integralImages: detector.kind == .cascade,
                                         detectorBytes: detector.memoryEstimate(for: header, decodedShortSide: natural))
    }

    /// Analyses the photo at `path` at the scale the detector wants, or defers it when that does
    /// not fit `memoryBudget`. A smaller scale would fit, but it finds fewer faces, and its verdict
    /// would be banked as if it were the photo's own and never redone (issue 22 item 7).
    public func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
        let clock = ContinuousClock()
        let start = clock.now
        func elapsed() -> Double { (clock.now - start).milliseconds }
        do {
            let header = try PhotoDecoder.probe(path, maxPixels: settings.maxPixels)
            if let memoryBudget {
                let needs = memoryNeed(for: header)
                guard needs <= memoryBudget else {
                    return .deferred(reason: "analysing \(header.width)x\(header.height) needs about \(MemoryGuard.mebibytes(needs)) MiB, more than the \(memoryBudget >> 20) MiB of headroom",
                                     needs: needs)
                }
            }
            let (image, faces) = try findFaces(in: path, header: header)
            let sha = try FileDigest.sha256Hex(path: path)
            let verdict = Verdict(faces: Self.recorded(faces), model: classifier.model.identifier, detector: detector.identifier,
                                  analysisSize: Verdict.Size(width: image.width, height: image.height), milliseconds: elapsed())
            return .verdict(BankedVerdict(json: try verdict.json(), label: verdict.label.rawValue,
                                          faceCount: verdict.faces.filter(\.confirmed).count, score: (Double(verdict.score) * 10_000).rounded() / 10_000,
                                          sha256: sha, format: header.format.rawValue,
                                          width: header.uprightSize.width, height: header.uprightSize.height))
        } catch let error as DecodeError {
            return .verdict(Self.errorVerdict(code: error.code.rawValue, message: error.message, path: path, elapsed: elapsed(),
                                              unanalysable: Self.isUnanalysable(error, path: path)))
        } catch let error as FaceAnalysisError {
            return .verdict(Self.errorVerdict(code: "analysis-failed", message: error.description, path: path, elapsed: elapsed()))
        } catch let error as TransferError {
            return .verdict(Self.errorVerdict(code: "unreadable", message: error.message, path: path, elapsed: elapsed()))
        } catch {
            return .verdict(Self.errorVerdict(code: "analysis-failed", message: "\(error)", path: path, elapsed: elapsed()))
        }
    }

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
    static func errorVerdict(code: String, message: String, path: String, elapsed: Double, unanalysable: Bool = false) -> BankedVerdict {
        let verdict = Verdict(failure: Verdict.Failure(code: code, message: message), milliseconds: elapsed, unanalysable: unanalysable)
        let json = (try? verdict.json()) ?? "{\"label\":\"\(verdict.label.rawValue)\"}"
        return BankedVerdict(json: json, label: verdict.label.rawValue, faceCount: 0, score: nil,
                             analysisError: code, sha256: unanalysable ? nil : try? FileDigest.sha256Hex(path: path))
    }
}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
