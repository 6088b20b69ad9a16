import Foundation
import Testing
@testable import FaceAnalysis

@Suite struct ClassifierModelFileTests {
    /// The model file as a JSON object, edited by `change`, back to bytes.
    private func edited(_ model: LinearModel, _ change: (inout [String: Any]) -> Void) throws -> Data {
        var object = try #require(try JSONSerialization.jsonObject(with: model.encoded()) as? [String: Any])
        change(&object)
        return try JSONSerialization.data(withJSONObject: object)
    }

    @Test func roundTripsThroughJSON() throws {
        let model = try ClassifierFixtures.smallModel()
        let bytes = try model.encoded()
        let decoded = try LinearModel.decode(bytes)
        #expect(decoded == model)
        #expect(try decoded.encoded() == bytes)
        #expect(decoded.identifier == model.identifier)
    }

    @Test func writesAndLoadsAFile() throws {
        let folder = try ClassifierFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("model.json").path
        let model = try ClassifierFixtures.smallModel()
        try model.write(to: path)
        #expect(try LinearModel.load(path, expecting: ClassifierFixtures.smallSpec) == model)
    }

    @Test func encodingIsSortedAndStable() throws {
        let text = String(decoding: try ClassifierFixtures.smallModel().encoded(), as: UTF8.self)
        let keys = ["\"bias\"", "\"featureSpec\"", "\"format\"", "\"formatVersion\"", "\"means\"", "\"name\"",
                    "\"scales\"", "\"threshold\"", "\"training\"", "\"weights\""]
        let positions = keys.compactMap { text.range(of: "\n  \($0)")?.lowerBound }
        #expect(positions.count == keys.count)
        #expect(positions == positions.sorted())
        #expect(text.hasSuffix("}\n"))
    }

    @Test func aModelForAnotherLayoutIsRejected() throws {
        let bytes = try ClassifierFixtures.smallModel().encoded()
        let error = #expect(throws: FaceAnalysisError.self) {
            try LinearModel.decode(bytes, path: "small.json", expecting: .crop)
        }
        #expect(error?.code == .featureSpecMismatch)
        #expect(error?.message.contains("intensity, geometry") == true)
        #expect(error?.path == "small.json")
    }

    @Test func aFeatureVersionThisBuildDoesNotComputeIsRejected() throws {
        let data = try edited(try ClassifierFixtures.smallModel()) { object in
            var spec = object["featureSpec"] as? [String: Any] ?? [:]
            spec["version"] = 2
            object["featureSpec"] = spec
        }
        let error = #expect(throws: FaceAnalysisError.self) { try LinearModel.decode(data) }
        #expect(error?.code == .featureSpecMismatch)
    }

    /// The shipped verdict model's file with its second-look size replaced (nil: removed, as in
    /// files written before the size was recorded).
    private func verdictModel(secondLookSide: Int?) throws -> Data {
        let shipped = try LinearModel.load(Fixtures.modelsDirectory + "/face-verdict.json")
        return try edited(shipped) { object in
            var spec = object["featureSpec"] as? [String: Any] ?? [:]
            spec["secondLookSide"] = secondLookSide
            object["featureSpec"] = spec
        }
    }

    @Test func theShippedVerdictModelRecordsTheLooksThisBuildRuns() throws {
        let shipped = try LinearModel.load(Fixtures.modelsDirectory + "/face-verdict.json")
        #expect(shipped.spec.groups.contains(.secondLook))
        #expect(shipped.spec.secondLookSide == BlazeFace.secondLookSide)
        #expect(try LinearModel.decode(try verdictModel(secondLookSide: BlazeFace.secondLookSide)).spec == shipped.spec)
    }

    @Test("a model fitted on second looks of another size is refused, not fed values it never saw",
          arguments: [nil, 96, 192] as [Int?])
    func aModelFittedOnOtherSecondLooksIsRejected(side: Int?) throws {
        let data = try verdictModel(secondLookSide: side)
        let error = #expect(throws: FaceAnalysisError.self) { try LinearModel.decode(data, path: "old.json") }
        #expect(error?.code == .featureSpecMismatch)
        let expected = side ?? Features.Spec.legacySecondLookSide
        #expect(error?.message.contains("fitted on \(expected)x\(expected) second looks") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("photodrain train --labelled") == true)
    }

    @Test func aSpecWithoutSecondLooksRecordsNoLookSize() {
        #expect(Features.Spec.crop.secondLookSide == nil)
        #expect(Features.Spec.detector.secondLookSide == nil)
        #expect(Features.Spec.detectorAndSecondLook.secondLookSide == BlazeFace.secondLookSide)
    }

    @Test func anUnknownFeatureGroupIsMalformed() throws {
        let data = try edited(try ClassifierFixtures.smallModel()) { object in
            var spec = object["featureSpec"] as? [String: Any] ?? [:]
            spec["groups"] = ["intensity", "colour-histogram"]
            object["featureSpec"] = spec
        }
        let error = #expect(throws: FaceAnalysisError.self) { try LinearModel.decode(data) }
        #expect(error?.code == .malformedModel)
    }

    @Test func aNewerFormatVersionIsRejected() throws {
        let data = try edited(try ClassifierFixtures.smallModel()) { $0["formatVersion"] = 2 }
        let error = #expect(throws: FaceAnalysisError.self) { try LinearModel.decode(data) }
        #expect(error?.code == .unsupportedModelVersion)
    }

    @Test(arguments: ["format", "weights", "scales", "threshold"])
    func brokenFilesAreMalformed(field: String) throws {
        let data = try edited(try ClassifierFixtures.smallModel()) { object in
            switch field {
            case "format": object["format"] = "something-else"
            case "weights": object["weights"] = [1, 2]
            case "scales": object["scales"] = [1, 1, 0, 1, 1, 1]
            default: object["threshold"] = 1.5
            }
        }
        let error = #expect(throws: FaceAnalysisError.self) { try LinearModel.decode(data) }
        #expect(error?.code == .malformedModel)
    }

    @Test func notJSONIsMalformedAndAMissingFileIsUnreadable() {
        let garbage = #expect(throws: FaceAnalysisError.self) { try LinearModel.decode(Data("{ nope".utf8)) }
        #expect(garbage?.code == .malformedModel)
        let missing = #expect(throws: FaceAnalysisError.self) {
            try LinearModel.load("/nonexistent/photodrain/model.json")
        }
        #expect(missing?.code == .modelFileAccess)
    }

    @Test func scoringFoldsStandardisationCorrectly() throws {
        let model = try LinearModel(name: "hand", spec: ClassifierFixtures.smallSpec,
                                    means: [1, 2, 3, 4, 5, 6], scales: [2, 2, 2, 4, 4, 4],
                                    weights: [1, -1, 0.5, 2, 0, -2], bias: 0.25)
        let x: [Float] = [3, 0, 5, 8, 1, 2]
        var expected: Float = 0.25
        for index in 0..<6 { expected += model.weights[index] * (x[index] - model.means[index]) / model.scales[index] }
        #expect(abs(model.score(x) - expected) < 1e-5)
        #expect(abs(model.probability(x) - 1 / (1 + exp(-expected))) < 1e-6)
    }

    @Test func identifierNamesTheExactWeights() throws {
        let model = try ClassifierFixtures.smallModel(name: "face-confirm")
        #expect(model.identifier.hasPrefix("face-confirm@"))
        #expect(model.identifier.count == "face-confirm@".count + 8)
        var weights = model.weights
        weights[0] += 0.001
        let nudged = try LinearModel(name: model.name, spec: model.spec, means: model.means, scales: model.scales,
                                     weights: weights, bias: model.bias, threshold: model.threshold)
        #expect(nudged.identifier != model.identifier)
    }
}
