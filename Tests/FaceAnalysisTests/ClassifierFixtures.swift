import Foundation
@testable import FaceAnalysis

/// Shared test data: paths into the package and a small separable synthetic problem.
enum ClassifierFixtures {
    /// The package's root folder, found from this file's path.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The committed face / non-face crops the shipped model never saw (see their LICENSES.md).
    static let cropsFolder = packageRoot.appendingPathComponent("Tests/FaceAnalysisTests/Fixtures/face-crops")

    /// The shipped default model.
    static let shippedModel = packageRoot.appendingPathComponent("Models/face-confirm.json")

    /// A six-feature spec (crop intensity and box geometry) so synthetic problems stay small.
    static let smallSpec = Features.Spec(cropSize: 4, cellSize: 2, orientationBins: 1, layoutGrid: 1,
                                         groups: [.intensity, .geometry])

    /// Points in [-1, 1]^6, a face when x0 + 0.5·x1 − x2 > 0, none within 0.2 of the boundary;
    /// feature 3 is multiplied by 100 and feature 4 offset by 50 so standardisation matters.
    static func separable(positives: Int, negatives: Int, seed: UInt64) -> (faces: [[Float]], others: [[Float]]) {
        var generator = SeededGenerator(seed: seed)
        var faces: [[Float]] = [], others: [[Float]] = []
        while faces.count < positives || others.count < negatives {
            var point = (0..<6).map { _ in Float(generator.index(below: 2001) - 1000) / 1000 }
            let margin = point[0] + 0.5 * point[1] - point[2]
            guard abs(margin) >= 0.2 else { continue }
            point[3] *= 100
            point[4] += 50
            if margin > 0 {
                if faces.count < positives { faces.append(point) }
            } else if others.count < negatives {
                others.append(point)
            }
        }
        return (faces, others)
    }

    /// A model trained on the separable problem with nothing held out.
    static func smallModel(name: String = "synthetic") throws -> LinearModel {
        let data = separable(positives: 60, negatives: 60, seed: 3)
        return try Trainer.train(positiveVectors: data.faces, negativeVectors: data.others,
                                 options: Trainer.Options(name: name, holdout: 0, seed: 3, spec: smallSpec)).model
    }

    /// A fresh empty temporary folder.
    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("photodrain-classifier-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
