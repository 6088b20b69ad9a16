import FaceAnalysis
import Foundation
import PhotoDecoding
import SystemSupport
import Testing
@testable import PhotoAnalysis

/// The analysis stage's one result: besides the verdict, everything the later stages need of
/// the file (digest, format, upright size, capture date), read while it is open for analysis.
@Suite struct AnalysedPhotoTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func fixture(_ name: String) -> String {
        repository.appendingPathComponent("Tests/PhotoDecodingTests/Fixtures").appendingPathComponent(name).path
    }

    static func pipeline() throws -> FacePipeline {
        let models = repository.appendingPathComponent("Models")
        return try FacePipeline(settings: AnalysisSettings(modelPath: models.appendingPathComponent(AnalysisSettings.verdictModelFile).path,
                                                           networkPath: models.appendingPathComponent(AnalysisSettings.networkFile).path))
    }

    static func analyse(_ path: String) throws -> AnalysedPhoto {
        guard case .verdict(let analysed) = try pipeline().analyze(path: path, memoryBudget: nil) else {
            throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "deferred with no memory limit"])
        }
        return analysed
    }

    @Test func aPhotoComesWithItsDigestFormatSizeAndCaptureDate() throws {
        let path = Self.fixture("capture-date.jpg")
        let analysed = try Self.analyse(path)
        #expect(analysed.verdict.error == nil)
        #expect(analysed.sha256 == (try SHA256.hex(path: path)))
        #expect(analysed.format == .jpeg)
        let upright = try PhotoDecoder.probe(path).uprightSize
        #expect(analysed.uprightSize == Verdict.Size(width: upright.width, height: upright.height))
        #expect(analysed.captureDate == "2021:03:04 05:06:07")
    }

    /// The size is the upright one: a photo stored on its side is as wide as it is shown.
    @Test func theSizeIsUpright() throws {
        let path = Self.fixture("orientation-6.jpg")
        let header = try PhotoDecoder.probe(path)
        let analysed = try Self.analyse(path)
        #expect(header.width != header.height)
        #expect(analysed.uprightSize == Verdict.Size(width: header.height, height: header.width))
        #expect(analysed.captureDate == nil)
    }

    /// A photo whose pixels are cut off keeps its identity and its date: it is uploaded with its
    /// error as the verdict, and with them.
    @Test func anUndecodablePhotoKeepsItsDigestAndCaptureDate() throws {
        let whole = try Data(contentsOf: URL(fileURLWithPath: Self.fixture("capture-date.jpg")))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pd-cut-\(UUID().uuidString).jpg").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try whole.prefix(whole.count / 3).write(to: URL(fileURLWithPath: path))
        let analysed = try Self.analyse(path)
        #expect(analysed.verdict.label == .error)
        #expect(analysed.sha256 == (try SHA256.hex(path: path)))
        #expect(analysed.captureDate == "2021:03:04 05:06:07")
        #expect(analysed.format == nil && analysed.uprightSize == nil)
    }
}
