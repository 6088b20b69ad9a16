import FaceAnalysis
import Foundation
import Testing
@testable import PhotoAnalysis

/// The precision in `AnalysisSettings` is the one the detector runs at and the verdict model is
/// checked against: each pipeline carries its own, so two in one process can differ.
@Suite struct AnalysisPrecisionTests {
    static let models = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Models")

    static func settings(_ precision: NetworkPrecision, model: String) -> AnalysisSettings {
        var settings = AnalysisSettings(modelPath: models.appendingPathComponent(model).path,
                                        networkPath: models.appendingPathComponent(AnalysisSettings.networkFile).path)
        settings.precision = precision
        return settings
    }

    static func networkPrecision(_ pipeline: FacePipeline) -> NetworkPrecision? {
        guard case let .blazeFace(network, _, _) = pipeline.detector else { return nil }
        return network.precision
    }

    @Test func eachPipelineRunsAtItsOwnPrecisionWithTheModelFittedAtIt() throws {
        let int8 = try FacePipeline(settings: Self.settings(.int8, model: AnalysisSettings.verdictModelFile))
        let fp32 = try FacePipeline(settings: Self.settings(.fp32, model: "face-verdict-fp32.json"))
        #expect(Self.networkPrecision(int8) == .int8)
        #expect(Self.networkPrecision(fp32) == .fp32)
        #expect(int8.classifier.model.spec.networkPrecision == .int8)
        #expect(fp32.classifier.model.spec.networkPrecision == .fp32)
    }

    @Test func aModelFittedAtTheOtherPrecisionIsRefused() {
        for (precision, model) in [(NetworkPrecision.fp32, AnalysisSettings.verdictModelFile), (.int8, "face-verdict-fp32.json")] {
            let error = #expect(throws: FaceAnalysisError.self) { try FacePipeline(settings: Self.settings(precision, model: model)) }
            #expect(error?.code == .featureSpecMismatch)
            #expect(error?.message.contains("this run computes \(precision) scores") == true)
        }
    }
}
