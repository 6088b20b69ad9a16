import Foundation
import Testing
@testable import FaceAnalysis

@Suite struct TrainingTests {
    private let spec = ClassifierFixtures.smallSpec

    @Test(arguments: [UInt64(1), 2, 7])
    func separableDataIsLearnedPerfectly(seed: UInt64) throws {
        let data = ClassifierFixtures.separable(positives: 150, negatives: 150, seed: seed)
        let result = try Trainer.train(positiveVectors: data.faces, negativeVectors: data.others,
                                       options: Trainer.Options(holdout: 0.2, seed: seed, spec: spec))
        let heldOut = try #require(result.heldOut)
        #expect(heldOut.accuracy == 1)
        #expect(heldOut.f1 == 1)
        #expect(result.model.training?.trainingMetrics.accuracy == 1)
    }

    @Test func holdoutIsStratified() throws {
        let data = ClassifierFixtures.separable(positives: 50, negatives: 150, seed: 4)
        let result = try Trainer.train(positiveVectors: data.faces, negativeVectors: data.others,
                                       options: Trainer.Options(holdout: 0.2, seed: 4, spec: spec))
        let heldOut = try #require(result.heldOut)
        #expect(heldOut.positives == 10)
        #expect(heldOut.negatives == 30)
        #expect(result.model.training?.trainingCount == 160)
        #expect(result.model.training?.heldOutCount == 40)
    }

    @Test func sameSeedSameModelOtherSeedOtherSplit() throws {
        let data = ClassifierFixtures.separable(positives: 40, negatives: 40, seed: 5)
        func train(_ seed: UInt64) throws -> LinearModel {
            try Trainer.train(positiveVectors: data.faces, negativeVectors: data.others,
                              options: Trainer.Options(holdout: 0.25, seed: seed, spec: spec)).model
        }
        let first = try train(11)
        #expect(try train(11) == first)
        #expect(try train(12).means != first.means)
    }

    @Test func nothingHeldOutTrainsOnEverything() throws {
        let data = ClassifierFixtures.separable(positives: 20, negatives: 30, seed: 6)
        let result = try Trainer.train(positiveVectors: data.faces, negativeVectors: data.others,
                                       options: Trainer.Options(holdout: 0, spec: spec))
        #expect(result.heldOut == nil)
        #expect(result.model.training?.trainingCount == 50)
    }

    @Test func imbalancedClassesStillFindTheMinority() throws {
        let data = ClassifierFixtures.separable(positives: 15, negatives: 285, seed: 8)
        let result = try Trainer.train(positiveVectors: data.faces, negativeVectors: data.others,
                                       options: Trainer.Options(holdout: 0, spec: spec))
        #expect(result.model.training?.trainingMetrics.recall == 1)
    }

    @Test(arguments: [
        (0, 10, 0.2, FaceAnalysisError.Code.insufficientData),
        (10, 0, 0.0, .insufficientData),
        (1, 10, 0.2, .insufficientData),
        (10, 10, 1.0, .invalidParameter),
        (10, 10, -0.1, .invalidParameter),
    ])
    func unusableRequestsAreRejected(positives: Int, negatives: Int, holdout: Double, code: FaceAnalysisError.Code) {
        let data = ClassifierFixtures.separable(positives: positives, negatives: negatives, seed: 2)
        let error = #expect(throws: FaceAnalysisError.self) {
            try Trainer.train(positiveVectors: data.faces, negativeVectors: data.others,
                              options: Trainer.Options(holdout: holdout, spec: spec))
        }
        #expect(error?.code == code)
    }

    @Test func vectorsOfAnotherLayoutAreRejected() {
        let error = #expect(throws: FaceAnalysisError.self) {
            try Trainer.train(positiveVectors: [[1, 2, 3]], negativeVectors: [[3, 2, 1]],
                              options: Trainer.Options(holdout: 0, spec: spec))
        }
        #expect(error?.code == .featureSpecMismatch)
    }

    @Test func trainsFromFoldersOfCrops() throws {
        let crops = ClassifierFixtures.cropsFolder
        var options = Trainer.Options(name: "from-folders", holdout: 0.2, seed: 1)
        options.regression.maxIterations = 60
        let result = try Trainer.train(positiveDirectory: crops.appendingPathComponent("positive").path,
                                       negativeDirectory: crops.appendingPathComponent("negative").path,
                                       options: options)
        let files = try Trainer.imageFiles(in: crops.appendingPathComponent("positive").path)
        #expect(result.model.training?.positives == files.count)
        #expect(result.model.spec == .crop)
        #expect(result.model.training?.trainingMetrics.accuracy ?? 0 > 0.9)
    }

    @Test func listsOnlyImagesSorted() throws {
        let folder = try ClassifierFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["b.png", "a.JPG", "notes.txt", "c.jpeg"] {
            try Data([0]).write(to: folder.appendingPathComponent(name))
        }
        let names = try Trainer.imageFiles(in: folder.path).map { URL(fileURLWithPath: $0).lastPathComponent }
        #expect(names == ["a.JPG", "b.png", "c.jpeg"])
    }

    @Test func undecodableOrMissingSamplesAreNamed() throws {
        let folder = try ClassifierFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bogus = folder.appendingPathComponent("bogus.png")
        try Data("not a png".utf8).write(to: bogus)
        let decodeError = #expect(throws: FaceAnalysisError.self) {
            try Trainer.train(positives: [bogus.path], negatives: [bogus.path])
        }
        #expect(decodeError?.code == .unreadableSample)
        #expect(decodeError?.path == bogus.path)
        let listError = #expect(throws: FaceAnalysisError.self) {
            try Trainer.imageFiles(in: folder.appendingPathComponent("missing").path)
        }
        #expect(listError?.code == .unreadableSample)
    }

    @Test(arguments: [Float(-200), -20, -1, 0, 1, 20, 200])
    func sigmoidIsStableAndSymmetric(z: Float) {
        let p = LogisticRegression.sigmoid(z)
        #expect(p.isFinite && p >= 0 && p <= 1)
        #expect(abs(p + LogisticRegression.sigmoid(-z) - 1) < 1e-6)
    }

    @Test func metricsFollowTheirDefinitions() {
        let metrics = HeldOutMetrics(truePositives: 8, falsePositives: 2, trueNegatives: 85, falseNegatives: 5)
        #expect(metrics.accuracy == 0.93)
        #expect(metrics.precision == 0.8)
        #expect(abs(metrics.recall - 8.0 / 13.0) < 1e-12)
        #expect(abs(metrics.f1 - 2 * 0.8 * (8.0 / 13.0) / (0.8 + 8.0 / 13.0)) < 1e-12)
        #expect(HeldOutMetrics(predicted: [true, false, true], actual: [true, true, false])
            == HeldOutMetrics(truePositives: 1, falsePositives: 1, trueNegatives: 0, falseNegatives: 1))
    }
}
