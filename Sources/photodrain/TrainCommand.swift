import FaceAnalysis
import Foundation

/// `photodrain train --positive DIR --negative DIR --out MODEL.json`: fit the face-confirmation
/// classifier from folders of crops and print its held-out metrics.
enum TrainCommand: Command {
    static let spec = CommandSpec(
        name: "train",
        abstract: "Fit the linear face-confirmation classifier from folders of face and non-face crops.",
        arguments: "",
        discussion: """
        Features are computed from each crop (gradient histograms, brightness, layout, symmetry) and
        a logistic regression is fitted with a stratified holdout; the same seed gives the same
        model file byte for byte. The model's name is the output file's stem.
        """,
        options: [
            .option("positive", "DIR", "Crops of faces (PNG or JPEG)."),
            .option("negative", "DIR", "Crops of things that are not faces."),
            .option("out", "MODEL.json", "Where to write the model."),
            .option("holdout", "FRACTION", "Share of each class held out for the metrics.", default: "0.2"),
            .option("seed", "N", "Seed of the holdout split and the augmentation.", default: "1"),
            .option("l2", "PENALTY", "L2 regularisation strength.", default: "0.001"),
            .flag("no-augment", "Train on the crops only (no mirrored or shifted copies)."),
            .option("evaluate", "DIR", "Also score DIR/positive and DIR/negative, crops never trained on."),
        ],
        positionals: (0, 0),
        examples: [("photodrain train --positive crops/positive --negative crops/negative --out Models/face-confirm.json --holdout 0.2 --seed 1",
                    "the default model (Scripts/train-face-model makes the crops)")],
        exitCodes: [(0, "model written"), (1, "the model could not be written"), (64, "usage error"), (65, "bad or too little data")]
    )

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        guard let positive = arguments.string("positive"), let negative = arguments.string("negative"),
              let out = arguments.string("out") else {
            throw UsageError("--positive, --negative and --out are required", command: spec.name)
        }
        var options = Trainer.Options(name: URL(fileURLWithPath: out).deletingPathExtension().lastPathComponent,
                                      augment: !arguments.flag("no-augment"))
        options.holdout = try arguments.double("holdout", default: 0.2, range: 0...0.9)
        options.seed = UInt64(try arguments.int("seed", default: 1, range: 0...Int.max))
        options.regression.l2 = Float(try arguments.double("l2", default: 0.001, range: 0...1000))
        let console = Console.shared
        do {
            let result = try Trainer.train(positiveDirectory: positive, negativeDirectory: negative, options: options)
            try result.model.write(to: out)
            let model = result.model
            console.out("model     \(model.identifier) -> \(out)")
            console.out("features  \(model.spec)")
            if let training = model.training {
                console.out("data      \(training.positives) faces, \(training.negatives) non-faces; trained on \(training.trainingCount) (\(training.trainingVectors) vectors with augmentation), held out \(training.heldOutCount) (seed \(training.seed))")
                console.out("fit       \(training.iterations) iterations, loss \(training.finalLoss)")
                console.out("training  \(training.trainingMetrics.summary)")
            }
            console.out("held out  \(result.heldOut?.summary ?? "nothing held out")")
            if let folder = arguments.string("evaluate") {
                let unseen = try Trainer.evaluate(model, positiveDirectory: folder + "/positive", negativeDirectory: folder + "/negative")
                console.out("evaluate  \(unseen.summary)  [\(folder)]")
            }
            return .success
        } catch {
            console.err("photodrain train: \(error)")
            switch error.code {
            case .invalidParameter: return .usage
            case .modelFileAccess: return .failure
            default: return .dataError
            }
        }
    }
}
