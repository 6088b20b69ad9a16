import FaceAnalysis
import Foundation
import Testing
@testable import PhotoAnalysis

/// The analysis tells a file that is not a photo PhotoDrain analyses (`unanalysable`, held back
/// from upload) from a broken photo (`error`, uploaded with its error as the verdict).
@Suite struct UnanalysableVerdictTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) + [UInt8](repeating: 0x20, count: 64) }

    /// name, bytes, expected label, expected code, how the message starts.
    static let cases: [(String, [UInt8], String, String, String)] = [
        ("IMG_0001.MOV", [0, 0, 0, 0x14] + ascii("ftypqt  "), "unanalysable", "unsupported-format", "a QuickTime video"),
        ("notes.txt", ascii("remember the milk"), "unanalysable", "unsupported-format", "not a JPEG, PNG, HEIF or WebP file"),
        ("empty.txt", [], "unanalysable", "empty", ""),
        ("movie-named.jpg", [0, 0, 0, 0x14] + ascii("ftypqt  "), "unanalysable", "unsupported-format", "a QuickTime video"),
        ("scan.pdf", ascii("%PDF-1.7"), "unanalysable", "unsupported-format", "a PDF document"),
        ("broken.jpg", [0xFF, 0xD8, 0xFF, 0xE0, 0, 16] + [UInt8](repeating: 7, count: 300), "error", "corrupt", ""),
        ("garbage.jpg", [UInt8](repeating: 0, count: 300), "error", "unsupported-format", "not a JPEG"),
        ("empty.jpg", [], "error", "empty", ""),
    ]

    @Test(arguments: cases.map(\.0))
    func labelsWhatIsNotAPhotoUnanalysable(name: String) throws {
        let (_, bytes, label, code, message) = try #require(Self.cases.first { $0.0 == name })
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pd-unanalysable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let models = Self.repository.appendingPathComponent("Models")
        let pipeline = try FacePipeline(settings: AnalysisSettings(modelPath: models.appendingPathComponent(AnalysisSettings.verdictModelFile).path,
                                                                   networkPath: models.appendingPathComponent(AnalysisSettings.networkFile).path))
        guard case .verdict(let analysed) = pipeline.analyze(path: path, memoryBudget: nil) else {
            Issue.record("\(name) was deferred")
            return
        }
        let verdict = analysed.verdict
        #expect(verdict.label.rawValue == label)
        #expect(verdict.error?.code == code)
        let said = verdict.error?.message ?? ""
        #expect(said.hasPrefix(message), "\(said)")
        // An unanalysable file is not read whole at analysis (an upload hashes it if it is sent).
        #expect((analysed.sha256 == nil) == (label == "unanalysable"))
        #expect(analysed.format == nil && analysed.uprightSize == nil && analysed.captureDate == nil)
        #expect(try Verdict.decode(json: verdict.json()) == verdict)
    }
}
