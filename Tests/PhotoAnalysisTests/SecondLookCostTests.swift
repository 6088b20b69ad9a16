import FaceAnalysis
import Foundation
import PhotoAnalysis
import Testing

/// Second looks cost two network runs per box: the pipeline runs them only for a model that weighs them.
@Suite struct SecondLookCostTests {
    static let models = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Models")

    static func secondLookMinScore(modelPath: String) throws -> Float? {
        let pipeline = try FacePipeline(settings: AnalysisSettings(modelPath: modelPath,
                                                                   networkPath: models.appendingPathComponent(AnalysisSettings.networkFile).path))
        guard case let .blazeFace(_, options, _) = pipeline.detector else { return nil }
        return options.secondLookMinScore
    }

    @Test func theShippedModelGetsSecondLooks() throws {
        let shipped = Self.models.appendingPathComponent(AnalysisSettings.verdictModelFile).path
        #expect(try LinearModel.load(shipped).spec.groups.contains(.secondLook))
        #expect(try Self.secondLookMinScore(modelPath: shipped) == BlazeFaceOptions().secondLookMinScore)
    }

    @Test func aModelWithoutThemDoesNotPayForThem() throws {
        let count = Features.Spec.detector.dimension
        let older = try LinearModel(name: "older", spec: .detector, means: Array(repeating: 0, count: count),
                                    scales: Array(repeating: 1, count: count), weights: Array(repeating: 0.1, count: count), bias: 0)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pd-older-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try older.write(to: path)
        let minScore = try #require(try Self.secondLookMinScore(modelPath: path))
        #expect(minScore > 1, "boxes would get second looks no feature reads")
    }
}
