// face-trainer: fits the face-confirmation model from two folders of crops, with the same
// arguments and semantics `photodrain train` will have, until the CLI wires that command.
//
//   swift run -c release face-trainer --positive DIR --negative DIR --out Models/NAME.json [--holdout 0.2] [--seed 1] [--l2 0.001] [--no-augment]
//       [--evaluate DIR]   also score DIR/positive and DIR/negative, crops never trained on
import FaceAnalysis
import Foundation

let usage = "usage: face-trainer --positive DIR --negative DIR --out MODEL.json [--holdout FRACTION] [--seed N] [--l2 PENALTY] [--no-augment] [--evaluate DIR]"

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(status)
}

var values: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
var augment = true
while let flag = arguments.popFirst() {
    if flag == "--no-augment" {
        augment = false
        continue
    }
    guard ["--positive", "--negative", "--out", "--holdout", "--seed", "--l2", "--evaluate"].contains(flag) else {
        fail("unknown argument \(flag)\n\(usage)", status: 64)
    }
    guard let value = arguments.popFirst() else { fail("\(flag) needs a value\n\(usage)", status: 64) }
    values[flag] = value
}
guard let positive = values["--positive"], let negative = values["--negative"], let out = values["--out"] else {
    fail(usage, status: 64)
}
var options = Trainer.Options(name: URL(fileURLWithPath: out).deletingPathExtension().lastPathComponent,
                              augment: augment)
if let text = values["--holdout"] {
    guard let holdout = Double(text) else { fail("--holdout must be a number, not \(text)", status: 64) }
    options.holdout = holdout
}
if let text = values["--seed"] {
    guard let seed = UInt64(text) else { fail("--seed must be a non-negative integer, not \(text)", status: 64) }
    options.seed = seed
}

if let text = values["--l2"] {
    guard let l2 = Float(text) else { fail("--l2 must be a number, not \(text)", status: 64) }
    options.regression.l2 = l2
}

do {
    let result = try Trainer.train(positiveDirectory: positive, negativeDirectory: negative, options: options)
    try result.model.write(to: out)
    let model = result.model
    print("model     \(model.identifier) -> \(out)")
    print("features  \(model.spec)")
    if let training = model.training {
        print("data      \(training.positives) faces, \(training.negatives) non-faces; trained on \(training.trainingCount) (\(training.trainingVectors) vectors with augmentation), held out \(training.heldOutCount) (seed \(training.seed))")
        print("fit       \(training.iterations) iterations, loss \(training.finalLoss)")
        print("training  \(training.trainingMetrics.summary)")
    }
    print("held out  \(result.heldOut?.summary ?? "nothing held out")")
    if let folder = values["--evaluate"] {
        let unseen = try Trainer.evaluate(model, positiveDirectory: folder + "/positive",
                                          negativeDirectory: folder + "/negative")
        print("evaluate  \(unseen.summary)  [\(folder)]")
    }
} catch {
    let status: Int32 = error.code == .invalidParameter ? 64 : (error.code == .modelFileAccess ? 1 : 65)
    fail("face-trainer: \(error)", status: status)
}
