import FaceAnalysis
import Foundation

/// `photodrain train --labelled DIR --out MODEL.json`: fit the classifier that decides verdicts from
/// labelled photos (grouped cross-validation, Platt-calibrated); or, with `--positive DIR
/// --negative DIR`, the older cascade box confirmer from folders of crops.
enum TrainCommand: Command {
    static let spec = CommandSpec(
        name: "train",
        abstract: "Fit the linear face classifier: from labelled photos (the verdict model), or from folders of crops.",
        arguments: "",
        discussion: """
        With --labelled DIR (a folder of photos with labels.json, as Tests/FaceAnalysisTests/Fixtures/
        LabelledPhotos): BlazeFace runs on every photo as analysis does; each box is labelled by the
        hand-drawn faces (IoU 0.5), a logistic regression on the detector's evidence and the box's
        pixels is fitted, and Platt scaling calibrates it. All figures printed are held out: the
        photos are split into --folds groups, every box of a photo in the same group, and each group
        is scored by a model (and a calibration) fitted on the others. The written model is fitted on
        every photo and carries those figures.
        With --positive and --negative: features are computed from each crop (gradient histograms,
        brightness, layout, symmetry) and a logistic regression is fitted with a stratified holdout.
        The same seed gives the same model file byte for byte. The model's name is the output file's stem.
        With --calibrate PHOTO...: BlazeFace's Float network runs on the photos (files or folders)
        as analysis does and the range of each int8 convolution's input is written to --out, the
        calibration the int8 plan reads beside the weights. Measure on photos the verdict model is
        not scored on.
        """,
        options: [
            .option("labelled", "DIR", "Photos with labels.json: train the verdict model on them."),
            .flag("calibrate", "Measure the int8 network's calibration on the photos given (files or folders)."),
            .option("folds", "N", "Photo groups for the held-out figures (--labelled).", default: "5"),
            .option("repeats", "N", "Cross-validations with different groupings, pooled in the figures (--labelled).", default: "5"),
            .option("weights", "PATH", "BlazeFace weights (--labelled).", default: "Models/blazeface-full-range.pdnn of this build"),
            .option("precision", "int8|fp32", "BlazeFace's arithmetic the model is fitted on and will be used with (--labelled).", default: "int8 (fp32 on a processor without AVX2)"),
            .option("positive", "DIR", "Crops of faces (PNG or JPEG)."),
            .option("negative", "DIR", "Crops of things that are not faces."),
            .option("out", "MODEL.json", "Where to write the model."),
            .option("rows", "FILE.csv", "Also write every detector box of the labelled photos, its label and features (--labelled)."),
            .option("holdout", "FRACTION", "Share of each class held out for the metrics.", default: "0.2"),
            .option("seed", "N", "Seed of the holdout split and the augmentation.", default: "1"),
            .option("l2", "PENALTY", "L2 regularisation strength.", default: "0.001"),
            .flag("no-augment", "Train on the crops only (no mirrored or shifted copies)."),
            .option("evaluate", "DIR", "Also score DIR/positive and DIR/negative, crops never trained on."),
        ],
        positionals: (0, nil),
        examples: [("photodrain train --labelled Tests/FaceAnalysisTests/Fixtures/LabelledPhotos --out Models/face-verdict.json",
                     "the default verdict model (Scripts/train-face-model runs this)"),
                    ("photodrain train --positive crops/positive --negative crops/negative --out Models/face-confirm.json --holdout 0.2 --seed 1",
                    "the default model (Scripts/train-face-model makes the crops)"),
                    ("photodrain train --calibrate --out Models/blazeface-full-range.int8.json SampleImages Tests/FaceAnalysisTests/Fixtures/images",
                     "the int8 network's calibration")],
        exitCodes: [(0, "model written"), (1, "the model could not be written"), (64, "usage error"), (65, "bad or too little data")]
    )

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        if arguments.flag("calibrate") { return try calibrate(arguments) }
        guard arguments.positionals.isEmpty else {
            throw UsageError("photos are given only with --calibrate; --labelled takes a folder", command: spec.name)
        }
        if let labelled = arguments.string("labelled") {
            return try trainOnPhotos(labelled, arguments)
        }
        guard let positive = arguments.string("positive"), let negative = arguments.string("negative"),
              let out = arguments.string("out") else {
            throw UsageError("give --labelled DIR --out MODEL, or --positive DIR --negative DIR --out MODEL", command: spec.name)
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
            return failed(error)
        }
    }

    static func trainOnPhotos(_ directory: String, _ arguments: ParsedArguments) throws -> ExitCode {
        guard let out = arguments.string("out") else {
            throw UsageError("--out MODEL.json is required", command: spec.name)
        }
        let precision = try AnalysisOptions.precision(arguments)
        var options = PhotoTrainer.Options(name: URL(fileURLWithPath: out).deletingPathExtension().lastPathComponent)
        // The model records the precision its scores are fitted at.
        options.spec = options.spec.at(precision)
        options.folds = try arguments.int("folds", default: 5, range: 2...100)
        options.repeats = try arguments.int("repeats", default: 5, range: 1...100)
        options.seed = UInt64(try arguments.int("seed", default: 1, range: 0...Int.max))
        options.l2 = Float(try arguments.double("l2", default: 0.01, range: 0...1000))
        let console = Console.shared
        let detector = try AnalysisOptions.blazeFace(arguments, precision: precision)
        do {
            let set = try LabelledPhotos(directory: directory)
            let bar = ProgressBar(title: "detecting faces", total: set.photos.count)
            let photos = try PhotoTrainer.collect(set, detector: detector, features: try Features(spec: options.spec, networkPrecision: precision)) { _, _ in
                bar.advance()
            }
            bar.finish()
            if let rows = arguments.string("rows") {
                guard writeRows(photos, to: rows) else { return .failure }
                console.err("wrote \(rows)")
            }
            let (model, e) = try PhotoTrainer.train(photos, options: options)
            try model.write(to: out)
            func f(_ v: Double) -> String { String(format: "%.3f", v) }
            console.out("model       \(model.identifier) -> \(out)")
            console.out("detector    \(detector.identifier)")
            console.out("features    \(model.spec)")
            console.out("data        \(e.photos) photos, \(e.boxes / max(e.repeats, 1)) boxes: \(e.faceBoxes / max(e.repeats, 1)) faces, \(e.otherBoxes / max(e.repeats, 1)) not, \(e.ignoredBoxes / max(e.repeats, 1)) on hard faces (left out)")
            console.out("held out    \(e.folds) photo groups, \(e.repeats) groupings pooled (seeds \(e.seed)...\(e.seed + UInt64(max(e.repeats, 1) - 1))); every figure below is from photos the model never saw")
            console.out("calibration Brier \(f(e.brier)) (base rate \(f(e.baseRateBrier))), ECE \(f(e.expectedCalibrationError)), log loss \(f(e.logLoss)); Platt a \(f(e.plattA)) b \(f(e.plattB))")
            for (name, score) in [("verdicts", e.classifier), ("detector", e.detectorAlone)] {
                console.out("\(name.padding(toLength: 11, withPad: " ", startingAt: 0)) precision \(f(score.precision)), recall \(f(score.recall)) (IoU 0.5), small faces \(score.smallFacesFound)/\(score.smallFaces), false faces on photos without people \(score.falseFacesWithoutPeople) (on animals or paintings \(score.falseFacesOnAnimalsAndPaintings)), photo labels \(score.photosRight)/\(score.photos) (\(f(score.photoAccuracy)))")
            }
            return .success
        } catch {
            return failed(error)
        }
    }

    /// One CSV line per detector box: the photo, its kind, the box's label (1 face, 0 not, empty on
    /// a hard face), the box in photo pixels, the detector's score, support, levels and second looks (`;`-separated),
    /// BlazeFace's six keypoints in photo pixels (empty for a cascade) and the feature vector.
    static func writeRows(_ photos: [PhotoTrainer.PhotoBoxes], to path: String) -> Bool {
        var text = "file,kind,subject,label,x,y,width,height,score,support,levels,second_looks"
        text += ["right_eye", "left_eye", "nose", "mouth", "right_ear", "left_ear"].map { ",\($0)_x,\($0)_y" }.joined()
        if let width = photos.first(where: { !$0.vectors.isEmpty })?.vectors[0].count {
            text += (0..<width).map { ",f\($0)" }.joined()
        }
        text += "\n"
        for photo in photos {
            let boxes = photo.photoBoxes
            for (i, region) in photo.regions.enumerated() {
                let label = photo.labels[i].map { $0 ? "1" : "0" } ?? ""
                let b = boxes[i]
                text += "\(photo.photo.file),\(photo.photo.kind),\(photo.photo.subject ?? ""),\(label),"
                text += String(format: "%.1f,%.1f,%.1f,%.1f,%.5f,%d,%d,", b.x, b.y, b.width, b.height, region.detectorScore, region.neighbors, region.levels ?? 0)
                text += region.secondLooks.map { $0.map { String(format: "%.5f", $0) }.joined(separator: ";") } ?? ""
                let keypoints = region.keypoints ?? []
                text += (0..<12).map { k in k < keypoints.count ? String(format: ",%.1f", Double(keypoints[k]) * photo.scale) : "," }.joined()
                text += photo.vectors[i].map { String(format: ",%.5f", $0) }.joined() + "\n"
            }
        }
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return true
        } catch {
            Console.shared.err("photodrain train: cannot write \(path): \(error.localizedDescription)")
            return false
        }
    }

    /// Reports a training failure and the exit status it means: a bad parameter is a usage error,
    /// a model file that cannot be written a failure, anything else bad or too little data.
    private static func failed(_ error: FaceAnalysisError) -> ExitCode {
        Console.shared.err("photodrain train: \(error)")
        switch error.code {
        case .invalidParameter: return .usage
        case .modelFileAccess: return .failure
        default: return .dataError
        }
    }
}
