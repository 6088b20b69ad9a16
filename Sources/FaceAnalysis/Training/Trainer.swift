import Foundation
import PhotoDecoding

/// Fits a `LinearModel` from labelled face and non-face images: what `photodrain train` runs.
///
/// Each image is one crop (the whole image is the region). The samples of each class are shuffled
/// with a `SeededGenerator` and the first `holdout` share of each class is held out (a stratified
/// split); standardisation and weights are fitted on the rest, and the held-out samples give the
/// metrics. The same files, options and seed always give the same model.
public enum Trainer {
    /// How to train.
    public struct Options: Sendable, Equatable {
        /// The model's name, e.g. `face-confirm` (the CLI passes the output file's stem).
        public var name: String
        /// The share of each class held out for the metrics, in 0..<1.
        public var holdout: Double
        /// The seed of the holdout split.
        public var seed: UInt64
        /// The features to compute.
        public var spec: Features.Spec
        /// The regression's penalty and stopping rule.
        public var regression: LogisticRegression
        /// The probability at or above which a box counts as a face.
        public var threshold: Float
        /// Whether each training image (never a held-out one) also contributes its mirror image and
        /// four 90% corner crops, each of them mirrored too: ten vectors per image, so the model
        /// sees the box jitter and left-right symmetry a cascade produces.
        public var augment: Bool

        /// Options with the project's defaults: 20% held out, seed 1, crop features, l2 0.001,
        /// augmentation on.
        public init(name: String = "face-confirm", holdout: Double = 0.2, seed: UInt64 = 1,
                    spec: Features.Spec = .crop, regression: LogisticRegression = LogisticRegression(),
                    threshold: Float = 0.5, augment: Bool = true) {
            self.name = name
            self.holdout = holdout
            self.seed = seed
            self.spec = spec
            self.regression = regression
            self.threshold = threshold
            self.augment = augment
        }
    }

    /// A trained model and how it did on the samples held out from its training.
    public struct Result: Sendable, Equatable {
        /// The model, with its training metadata filled in.
        public var model: LinearModel
        /// Metrics on the held-out samples; nil when `holdout` was 0.
        public var heldOut: HeldOutMetrics?
    }

    /// The file extensions treated as images when listing a folder.
    public static let imageExtensions: Set<String> = ["png", "jpg", "jpeg"]

    /// Trains from the images in two folders (not recursive; `.png`, `.jpg`, `.jpeg`, sorted by
    /// name). Throws `unreadableSample` when a folder cannot be listed or an image decoded, and as
    /// `train(positives:negatives:options:)` does.
    public static func train(positiveDirectory: String, negativeDirectory: String,
                             options: Options = Options()) throws(FaceAnalysisError) -> Result {
        try train(positives: imageFiles(in: positiveDirectory), negatives: imageFiles(in: negativeDirectory),
                  options: options)
    }

    /// Trains from face image files and non-face image files. Throws `unreadableSample` for an image
    /// that cannot be decoded, `insufficientData` when a class is empty or too small to hold out
    /// from, and `invalidParameter` for a holdout outside 0..<1.
    public static func train(positives: [String], negatives: [String],
                             options: Options = Options()) throws(FaceAnalysisError) -> Result {
        let features = try Features(spec: options.spec)
        let positiveSamples = try positives.map { path throws(FaceAnalysisError) in
            try variants(of: path, features, augment: options.augment)
        }
        let negativeSamples = try negatives.map { path throws(FaceAnalysisError) in
            try variants(of: path, features, augment: options.augment)
        }
        return try train(positiveSamples: positiveSamples, negativeSamples: negativeSamples, options: options)
    }

    /// Trains from feature vectors already computed with `options.spec` (no augmentation: there are
    /// no images). Throws `insufficientData` when a class is empty or too small to hold out from,
    /// `invalidParameter` for a holdout outside 0..<1 or a threshold outside 0...1, and
    /// `featureSpecMismatch` when a vector's length is not the spec's dimension.
    public static func train(positiveVectors: [[Float]], negativeVectors: [[Float]],
                             options: Options = Options()) throws(FaceAnalysisError) -> Result {
        try train(positiveSamples: positiveVectors.map { [$0] }, negativeSamples: negativeVectors.map { [$0] },
                  options: options)
    }

    /// The core: each sample is its original vector followed by its augmented variants. Samples are
    /// split, never variants, so no variant of a held-out image is trained on; held-out samples are
    /// scored on their original vector only.
    private static func train(positiveSamples: [[[Float]]], negativeSamples: [[[Float]]],
                              options: Options) throws(FaceAnalysisError) -> Result {
        try options.spec.validate()
        guard options.holdout >= 0, options.holdout < 1 else {
            throw FaceAnalysisError(.invalidParameter, "holdout must be at least 0 and below 1, not \(options.holdout)")
        }
        guard (0...1).contains(options.threshold) else {
            throw FaceAnalysisError(.invalidParameter, "threshold must be within 0...1, not \(options.threshold)")
        }
        let dimension = options.spec.dimension
        guard (positiveSamples + negativeSamples).allSatisfy({ $0.allSatisfy { $0.count == dimension } }) else {
            throw FaceAnalysisError(.featureSpecMismatch, "every feature vector must have \(dimension) values for \(options.spec)")
        }
        guard !positiveSamples.isEmpty, !negativeSamples.isEmpty else {
            throw FaceAnalysisError(.insufficientData,
                                  "training needs faces and non-faces; got \(positiveSamples.count) faces and \(negativeSamples.count) non-faces")
        }
        var generator = SeededGenerator(seed: options.seed)
        let positiveSplit = try split(positiveSamples, holdout: options.holdout, generator: &generator, kind: "faces")
        let negativeSplit = try split(negativeSamples, holdout: options.holdout, generator: &generator, kind: "non-faces")

        let positiveTraining = positiveSplit.training.flatMap { $0 }
        let negativeTraining = negativeSplit.training.flatMap { $0 }
        let trainingRows = positiveTraining + negativeTraining
        let trainingLabels = [Bool](repeating: true, count: positiveTraining.count)
            + [Bool](repeating: false, count: negativeTraining.count)
        let standardiser = Standardiser(fitting: trainingRows)
        let fit = try options.regression.fit(rows: trainingRows.map(standardiser.apply), labels: trainingLabels)

        // A provisional model scores the training rows; the final one carries the metadata too.
        let provisional = try LinearModel(name: options.name, spec: options.spec, means: standardiser.means,
                                          scales: standardiser.scales, weights: fit.weights, bias: fit.bias,
                                          threshold: options.threshold)
        let trainingMetrics = HeldOutMetrics(predicted: trainingRows.map(provisional.isFace), actual: trainingLabels)
        let heldOutRows = (positiveSplit.heldOut + negativeSplit.heldOut).compactMap(\.first)
        let heldOutLabels = [Bool](repeating: true, count: positiveSplit.heldOut.count)
            + [Bool](repeating: false, count: negativeSplit.heldOut.count)
        let heldOut = heldOutRows.isEmpty ? nil
            : HeldOutMetrics(predicted: heldOutRows.map(provisional.isFace), actual: heldOutLabels)
        let metadata = TrainingMetadata(positives: positiveSamples.count, negatives: negativeSamples.count,
                                        trainingCount: positiveSplit.training.count + negativeSplit.training.count,
                                        trainingVectors: trainingRows.count, heldOutCount: heldOutRows.count,
                                        holdout: options.holdout, seed: options.seed, l2: options.regression.l2,
                                        iterations: fit.iterations, finalLoss: fit.loss,
                                        trainingMetrics: trainingMetrics, heldOutMetrics: heldOut)
        let model = try LinearModel(name: options.name, spec: options.spec, means: standardiser.means,
                                    scales: standardiser.scales, weights: fit.weights, bias: fit.bias,
                                    threshold: options.threshold, training: metadata)
        return Result(model: model, heldOut: heldOut)
    }

    /// How `model` does on the crops in two folders (each image whole, no augmentation): the check
    /// of a trained model against data it never saw. Throws `unreadableSample` as `train` does.
    public static func evaluate(_ model: LinearModel, positiveDirectory: String,
                                negativeDirectory: String) throws(FaceAnalysisError) -> HeldOutMetrics {
        let features = try Features(spec: model.spec)
        let positives = try imageFiles(in: positiveDirectory).map { path throws(FaceAnalysisError) in
            model.isFace(try variants(of: path, features, augment: false)[0])
        }
        let negatives = try imageFiles(in: negativeDirectory).map { path throws(FaceAnalysisError) in
            model.isFace(try variants(of: path, features, augment: false)[0])
        }
        return HeldOutMetrics(predicted: positives + negatives,
                              actual: [Bool](repeating: true, count: positives.count)
                                  + [Bool](repeating: false, count: negatives.count))
    }

    /// The image files directly inside `directory`, by extension, sorted by name. Throws
    /// `unreadableSample` when the folder cannot be listed.
    public static func imageFiles(in directory: String) throws(FaceAnalysisError) -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw FaceAnalysisError(.unreadableSample, "the folder cannot be listed", path: directory, cause: error.localizedDescription)
        }
        let base = URL(fileURLWithPath: directory)
        return names.filter { imageExtensions.contains(URL(fileURLWithPath: $0).pathExtension.lowercased()) }
            .sorted()
            .map { base.appendingPathComponent($0).path }
    }

    /// The image's vector, then (when augmenting) its variants: the mirror, the four 90% corner
    /// crops, and their mirrors.
    private static func variants(of path: String, _ features: Features, augment: Bool) throws(FaceAnalysisError) -> [[Float]] {
        let image: Image
        do {
            image = try PhotoDecoder.decode(path, options: DecodeOptions(output: .gray))
        } catch {
            throw FaceAnalysisError(.unreadableSample, "the training image cannot be decoded", path: path,
                                  cause: error.description)
        }
        guard augment else { return [try features.extract(crop: image)] }
        let inner = FaceRegion(x: 0, y: 0, width: max(1, image.width * 9 / 10), height: max(1, image.height * 9 / 10))
        let dx = image.width - inner.width, dy = image.height - inner.height
        var regions = [FaceRegion.whole(width: image.width, height: image.height)]
        for (x, y) in [(0, 0), (dx, 0), (0, dy), (dx, dy)] {
            regions.append(FaceRegion(x: x, y: y, width: inner.width, height: inner.height))
        }
        let mirrored = mirror(image)
        let mirroredRegions = regions.map { region in
            FaceRegion(x: image.width - region.x - region.width, y: region.y, width: region.width, height: region.height)
        }
        let originals = try features.extract(from: image, regions: regions)
        let mirrors = try features.extract(from: mirrored, regions: mirroredRegions)
        // The original first (held-out samples use only it), then the rest in a fixed order.
        return [originals[0], mirrors[0]] + originals.dropFirst() + mirrors.dropFirst()
    }

    /// `image` flipped left to right.
    static func mirror(_ image: Image) -> Image {
        let width = image.width, channels = image.channels
        return image.pixels.withUnsafeBufferPointer { source in
            Image(width: width, height: image.height, channels: channels) { target in
                for y in 0..<image.height {
                    let row = y * width * channels
                    for x in 0..<width {
                        for channel in 0..<channels {
                            target[row + x * channels + channel] = source[row + (width - 1 - x) * channels + channel]
                        }
                    }
                }
            }
        }
    }

    /// Shuffles one class and cuts off its held-out share (rounded, at least one when holding out).
    private static func split(_ rows: [[[Float]]], holdout: Double, generator: inout SeededGenerator,
                              kind: String) throws(FaceAnalysisError) -> (training: [[[Float]]], heldOut: [[[Float]]]) {
        var order = Array(rows.indices)
        generator.shuffle(&order)
        let heldOutCount = holdout > 0 ? max(1, Int((Double(rows.count) * holdout).rounded())) : 0
        guard rows.count - heldOutCount >= 1 else {
            throw FaceAnalysisError(.insufficientData,
                                  "\(rows.count) \(kind) are too few to hold out \(heldOutCount) and still train on some")
        }
        let heldOut = order.prefix(heldOutCount).map { rows[$0] }
        let training = order.dropFirst(heldOutCount).map { rows[$0] }
        return (training, heldOut)
    }
}
