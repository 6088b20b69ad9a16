import Foundation
import PhotoDecoding
import Testing
@testable import FaceAnalysis

/// The shipped `Models/face-confirm.json` on committed crops from photos it was never trained on:
/// the cascade's boxes on the astronaut's face, its false boxes elsewhere in that photo, and its
/// boxes on the face-free cat (chelsea) and clock photos (Scripts/make-training-crops, `--fixtures`).
@Suite struct ClassifierShippedModelTests {
    private func probabilities(_ label: String, _ model: LinearModel) throws -> [String: Float] {
        let classifier = try FaceClassifier(model: model)
        var result: [String: Float] = [:]
        for path in try Trainer.imageFiles(in: ClassifierFixtures.cropsFolder.appendingPathComponent(label).path) {
            let image = try PhotoDecoder.decode(path)
            let region = FaceRegion.whole(width: image.width, height: image.height)
            result[URL(fileURLWithPath: path).lastPathComponent] = try classifier.probabilities(in: image, regions: [region])[0]
        }
        return result
    }

    @Test func loadsWithTheCropSpec() throws {
        let model = try LinearModel.load(ClassifierFixtures.shippedModel.path, expecting: .crop)
        #expect(model.name == "face-confirm")
        #expect(model.training?.heldOutMetrics != nil)
    }

    @Test func confirmsEveryUnseenFace() throws {
        let model = try LinearModel.load(ClassifierFixtures.shippedModel.path, expecting: .crop)
        let faces = try probabilities("positive", model)
        #expect(faces.count >= 5)
        for (name, probability) in faces.sorted(by: { $0.key < $1.key }) {
            #expect(probability >= model.threshold, "\(name) scored \(probability)")
        }
    }

    @Test func rejectsMostUnseenNonFaces() throws {
        let model = try LinearModel.load(ClassifierFixtures.shippedModel.path, expecting: .crop)
        let others = try probabilities("negative", model)
        #expect(others.count >= 40)
        let accepted = others.filter { $0.value >= model.threshold }.keys.sorted()
        #expect(Double(accepted.count) <= 0.15 * Double(others.count), "accepted as faces: \(accepted)")
    }

    @Test func evaluationAgreesWithTheClassifier() throws {
        let model = try LinearModel.load(ClassifierFixtures.shippedModel.path, expecting: .crop)
        let folder = ClassifierFixtures.cropsFolder
        let metrics = try Trainer.evaluate(model, positiveDirectory: folder.appendingPathComponent("positive").path,
                                           negativeDirectory: folder.appendingPathComponent("negative").path)
        let faces = try probabilities("positive", model), others = try probabilities("negative", model)
        #expect(metrics.truePositives == faces.values.filter { $0 >= model.threshold }.count)
        #expect(metrics.falsePositives == others.values.filter { $0 >= model.threshold }.count)
        #expect(metrics.count == faces.count + others.count)
    }
}
