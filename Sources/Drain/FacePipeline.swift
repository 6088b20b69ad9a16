import AssetStore
import FaceAnalysis
import Foundation
import PhotoDecoding
import Transfer

/// Where the analysis finds its cascade and model, and how it looks for faces.
public struct AnalysisSettings: Sendable {
    /// The short side photos are analysed at.
    public var analysisSize = 480
    /// OpenCV cascade XML (Debian's opencv-data installs these).
    public var cascadePath = AnalysisSettings.defaultCascade
    /// The face-confirmation model (`photodrain train` writes one).
    public var modelPath: String
    public var detection = DetectionParameters(scaleFactor: 1.1, minNeighbors: 3, minSize: 24)
    /// Refuse photos whose header claims more pixels.
    public var maxPixels = DecodeOptions.defaultMaxPixels

    public static let defaultCascade = "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml"

    public init(modelPath: String) { self.modelPath = modelPath }

    /// The shipped model, found beside an installed binary (`../share/photodrain/models`) or in
    /// the `Models/` folder of the checkout the binary was built in; nil when neither exists.
    public static func locateDefaultModel(executable: String = CommandLine.arguments.first ?? "") -> String? {
        let exe = URL(fileURLWithPath: executable).resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        let installed = dir.appendingPathComponent("../share/photodrain/models/face-confirm.json").standardized.path
        if FileManager.default.fileExists(atPath: installed) { return installed }
        for _ in 0..<6 {
            let candidate = dir.appendingPathComponent("Models/face-confirm.json").path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return nil
    }
}

/// The analysis of one photo: probe, DCT-scaled gray decode (stepping the scale down to fit the
/// memory budget), resize to the analysis size, cascade detection, linear confirmation of each
/// box, and the verdict with the file's SHA-256.
public struct FacePipeline: PhotoAnalyzing {
    public let settings: AnalysisSettings
    public let cascade: CascadeClassifier
    public let classifier: FaceClassifier

    /// Loads the cascade and the model; throws their errors (unreadable, malformed, mismatched).
    public init(settings: AnalysisSettings) throws {
        self.settings = settings
        cascade = try CascadeClassifier(contentsOf: settings.cascadePath)
        classifier = try FaceClassifier(model: try LinearModel.load(settings.modelPath))
    }

    public func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
        let clock = ContinuousClock()
        let start = clock.now
        func elapsed() -> Double { (clock.now - start).milliseconds }
        do {
            let header = try PhotoDecoder.probe(path, maxPixels: settings.maxPixels)
            var target = settings.analysisSize
            if let memoryBudget {
                let natural = PhotoDecoder.scaleDenominator(for: header, targetShortSide: settings.analysisSize)
                guard let denominator = MemoryGuard.admit(width: header.width, height: header.height, denominator: natural,
                                                          progressive: header.decodesFullFrame, analysisShortSide: settings.analysisSize,
                                                          headroom: memoryBudget) else {
                    return .deferred(reason: "decoding \(header.width)x\(header.height) does not fit \(memoryBudget >> 20) MiB of headroom")
                }
                if denominator != natural {
                    target = scaledDimension(min(header.width, header.height), denominator: denominator)
                }
            }
            let decoded = try PhotoDecoder.decode(path, options: DecodeOptions(output: .gray, targetShortSide: target,
                                                                               maxPixels: settings.maxPixels))
            let image = Resize.toAnalysisSize(decoded, shortSide: settings.analysisSize)
            let regions = try cascade.detect(in: image, parameters: settings.detection).map {
                FaceRegion(x: $0.x, y: $0.y, width: $0.width, height: $0.height, neighbors: $0.neighbors,
                           detectorScore: Float($0.neighbors))
            }
            let sha = try FileDigest.sha256Hex(path: path)
            let verdict = try classifier.verdict(for: image, regions: regions, cascade: cascade.identifier, milliseconds: elapsed())
            return .verdict(BankedVerdict(json: try verdict.json(), label: verdict.label.rawValue,
                                          faceCount: verdict.faces.filter(\.confirmed).count, score: (Double(verdict.score) * 10_000).rounded() / 10_000,
                                          sha256: sha, format: header.format.rawValue,
                                          width: header.uprightSize.width, height: header.uprightSize.height))
        } catch let error as DecodeError {
            return .verdict(Self.errorVerdict(code: error.code.rawValue, message: error.message, path: path, elapsed: elapsed(),
                                              unanalysable: Self.isUnanalysable(error, path: path)))
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
