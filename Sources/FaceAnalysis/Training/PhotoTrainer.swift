import Foundation
import PhotoDecoding

/// How a face classifier trained on labelled photos did on photos it never saw: every figure comes
/// from grouped cross-validation, where a photo's boxes are all in one fold, so no photo is ever
/// both trained on and scored.
public struct PhotoEvaluation: Codable, Sendable, Equatable {
    /// Photos, folds, and the detector's boxes by their label (boxes on hard faces are ignored).
    public var photos: Int
    public var folds: Int
    /// Cross-validations pooled (different groupings); box and face counts are summed over them.
    public var repeats: Int
    public var seed: UInt64
    public var boxes: Int
    public var faceBoxes: Int
    public var otherBoxes: Int
    public var ignoredBoxes: Int
    /// Calibration of the held-out box probabilities: mean squared error, the same for always
    /// answering the base rate, and the expected calibration error over 10 equal-width bins.
    public var brier: Double
    public var baseRateBrier: Double
    public var expectedCalibrationError: Double
    public var logLoss: Double
    /// Faces confirmed by the classifier (probability at or above the threshold), held out, against the labels.
    public var classifier: DetectionScore
    /// The detector's own boxes at its score 0.5, for comparison.
    public var detectorAlone: DetectionScore
    /// Platt scaling applied on top of the regression: p = sigmoid(a * z + b).
    public var plattA: Double
    public var plattB: Double
}

/// Trains the face classifier that decides a photo's verdict from labelled photos: the detector
/// proposes boxes, each box is labelled by the hand-labelled faces (IoU 0.5: a face, otherwise not;
/// boxes on hard faces are left out), a logistic regression (plain log loss, so probabilities keep
/// the data's base rate) is fitted on the boxes' features, and Platt scaling fitted on held-out
/// scores calibrates it. Folds are whole photos.
public enum PhotoTrainer {
    /// Training settings.
    public struct Options: Sendable, Equatable {
        public var name: String
        public var folds: Int
        public var seed: UInt64
        public var l2: Float
        public var spec: Features.Spec
        public var threshold: Float
        /// Cross-validations, each with its own grouping (seeds `seed`, `seed + 1`, …), pooled in the figures.
        public var repeats: Int

        public init(name: String = "face-verdict", folds: Int = 5, seed: UInt64 = 1, l2: Float = 0.01,
                    spec: Features.Spec = .detectorAndSecondLook, threshold: Float = 0.5, repeats: Int = 5) {
            self.name = name
            self.repeats = repeats
            self.folds = folds
            self.seed = seed
            self.l2 = l2
            self.spec = spec
            self.threshold = threshold
        }
    }

    /// One labelled photo's boxes as the detector found them.
    public struct PhotoBoxes: Sendable {
        public var photo: LabelledPhotos.Photo
        /// Regions in the decoded image's pixels, strongest first.
        public var regions: [FaceRegion]
        /// Photo pixels per decoded pixel.
        public var scale: Double
        /// One feature vector per region.
        public var vectors: [[Float]]
        /// true: a labelled face; false: not a face; nil: on a hard face, left out.
        public var labels: [Bool?]

        /// The regions' boxes in photo pixels.
        public var photoBoxes: [(x: Double, y: Double, width: Double, height: Double)] {
            regions.map { (Double($0.x) * scale, Double($0.y) * scale, Double($0.width) * scale, Double($0.height) * scale) }
        }
    }

    /// Runs `detector` on every photo of `set` (decoded as the analysis pipeline decodes them) and
    /// labels its boxes. Throws `unreadableSample` for a photo that cannot be decoded.
    public static func collect(_ set: LabelledPhotos, detector: FaceDetector, features: Features,
                               progress: (Int, Int) -> Void = { _, _ in }) throws(FaceAnalysisError) -> [PhotoBoxes] {
        var result: [PhotoBoxes] = []
        for (index, photo) in set.photos.enumerated() {
            progress(index, set.photos.count)
            let path = set.path(of: photo)
            let decoded: (image: Image, photoScale: Double)
            do {
                decoded = try detector.decodeForDetection(path: path)
            } catch {
                throw FaceAnalysisError(.unreadableSample, "cannot decode \(photo.file): \(error)", path: path)
            }
            let regions = try detector.regions(in: decoded.image, photoScale: decoded.photoScale)
            let vectors = try features.extract(from: decoded.image, regions: regions)
            var boxes = PhotoBoxes(photo: photo, regions: regions, scale: 1 / decoded.photoScale, vectors: vectors, labels: [])
            boxes.labels = DetectionScore.match(boxes.photoBoxes, to: photo.faces).boxLabels
            result.append(boxes)
        }
        return result
    }

    /// Grouped cross-validation, then the final model on every photo. Throws `insufficientData` when
    /// there are fewer photos than folds or a training fold lacks faces or non-faces.
    public static func train(_ photos: [PhotoBoxes], options: Options) throws(FaceAnalysisError) -> (LinearModel, PhotoEvaluation) {
        try options.spec.validate()
        guard options.folds >= 2, photos.count >= options.folds else {
            throw FaceAnalysisError(.insufficientData, "\(photos.count) photos cannot be split into \(options.folds) folds")
        }
        // Held-out probabilities under `repeats` different groupings of the photos (a few photos
        // carry many faces, so one grouping alone swings the figures by several points).
        var heldOut: [[[Float]]] = []
        var calibration: (Double, Double) = (1, 0)
        for r in 0..<max(1, options.repeats) {
            let (probabilities, platt) = try crossValidate(photos, options: options, seed: options.seed &+ UInt64(r))
            heldOut.append(probabilities)
            if r == 0 { calibration = platt }
        }
        let (a, b) = calibration
        let final = try fit(photos, options: options)
        let model = try LinearModel(name: options.name, spec: options.spec, means: final.means, scales: final.scales,
                                    weights: final.weights.map { $0 * Float(a) }, bias: final.bias * Float(a) + Float(b),
                                    threshold: options.threshold)
        var evaluation = evaluate(Array(repeating: photos, count: heldOut.count).flatMap { $0 },
                                  probabilities: heldOut.flatMap { $0 }, threshold: options.threshold)
        evaluation.photos = photos.count
        evaluation.repeats = heldOut.count
        evaluation.folds = options.folds
        evaluation.seed = options.seed
        evaluation.plattA = a
        evaluation.plattB = b
        return (model.with(evaluation: evaluation), evaluation)
    }

    /// One grouped cross-validation: each box's held-out, calibrated probability, and the Platt
    /// scaling fitted on all held-out logits (for the final model).
    static func crossValidate(_ photos: [PhotoBoxes], options: Options, seed: UInt64) throws(FaceAnalysisError) -> ([[Float]], (Double, Double)) {
        let fold = assignFolds(photos, folds: options.folds, seed: seed)
        var heldOutLogits = photos.map { [Float?](repeating: nil, count: $0.regions.count) }
        for k in 0..<options.folds {
            let training = photos.indices.filter { fold[$0] != k }
            let fitted = try fit(training.map { photos[$0] }, options: options)
            for i in photos.indices where fold[i] == k {
                for (j, vector) in photos[i].vectors.enumerated() { heldOutLogits[i][j] = fitted.score(vector) }
            }
        }
        // Each fold's calibration is fitted on the other folds' held-out logits only.
        var probabilities = photos.map { [Float](repeating: 0, count: $0.regions.count) }
        for k in 0..<options.folds {
            let (a, b) = try platt(photos: photos, logits: heldOutLogits, where: { fold[$0] != k })
            for i in photos.indices where fold[i] == k {
                for j in photos[i].regions.indices {
                    probabilities[i][j] = LogisticRegression.sigmoid(Float(a) * (heldOutLogits[i][j] ?? 0) + Float(b))
                }
            }
        }
        return (probabilities, try platt(photos: photos, logits: heldOutLogits, where: { _ in true }))
    }

    /// Photos dealt into folds: shuffled by `seed`, then dealt kind by kind so each fold gets its
    /// share of group photos, portraits and photos without people.
    static func assignFolds(_ photos: [PhotoBoxes], folds: Int, seed: UInt64) -> [Int] {
        var generator = SeededGenerator(seed: seed)
        var order = Array(photos.indices)
        order.shuffle(using: &generator)
        order.sort { photos[$0].photo.kind < photos[$1].photo.kind }  // stable: shuffled within each kind
        var fold = [Int](repeating: 0, count: photos.count)
        for (position, index) in order.enumerated() { fold[index] = position % folds }
        return fold
    }

    /// A regression on the labelled boxes of `photos`, standardised on them.
    static func fit(_ photos: [PhotoBoxes], options: Options) throws(FaceAnalysisError) -> LinearModel {
        var rows: [[Float]] = []
        var labels: [Bool] = []
        for photo in photos {
            for (vector, label) in zip(photo.vectors, photo.labels) {
                guard let label else { continue }
                rows.append(vector)
                labels.append(label)
            }
        }
        let standardiser = Standardiser(fitting: rows)
        let fit = try newton(rows: rows.map(standardiser.apply), labels: labels, l2: Double(options.l2))
        return try LinearModel(name: options.name, spec: options.spec, means: standardiser.means, scales: standardiser.scales,
                               weights: fit.weights.map(Float.init), bias: Float(fit.bias), threshold: options.threshold)
    }

    /// Platt scaling: a one-feature logistic regression of the labels on the held-out logits.
    static func platt(photos: [PhotoBoxes], logits: [[Float?]], where include: (Int) -> Bool) throws(FaceAnalysisError) -> (Double, Double) {
        var rows: [[Float]] = []
        var labels: [Bool] = []
        for i in photos.indices where include(i) {
            for (j, label) in photos[i].labels.enumerated() {
                guard let label, let z = logits[i][j] else { continue }
                rows.append([z])
                labels.append(label)
            }
        }
        let fit = try newton(rows: rows, labels: labels, l2: 0)
        return (fit.weights[0], fit.bias)
    }

    /// Logistic regression by Newton's method (plain mean log loss plus l2/2·|w|², bias free), in
    /// Double: exact to the last digit for the few features and few hundred boxes here, where
    /// gradient descent stops short on the nearly separable data. Throws `insufficientData`
    /// without both classes.
    static func newton(rows: [[Float]], labels: [Bool], l2: Double) throws(FaceAnalysisError) -> (weights: [Double], bias: Double) {
        let positives = labels.filter { $0 }.count
        guard let d = rows.first?.count, positives > 0, positives < labels.count else {
            throw FaceAnalysisError(.insufficientData, "training needs faces and non-faces; got \(positives) faces of \(labels.count) boxes")
        }
        let n = Double(rows.count)
        let dim = d + 1
        let x = rows.map { $0.map(Double.init) + [1] }
        var w = [Double](repeating: 0, count: dim)
        // A tiny ridge on the bias too keeps the Hessian invertible on separable data.
        let ridge = max(l2, 1e-6)
        for _ in 0..<100 {
            var gradient = [Double](repeating: 0, count: dim)
            var hessian = [Double](repeating: 0, count: dim * dim)
            for (row, label) in zip(x, labels) {
                var z = 0.0
                for i in 0..<dim { z += row[i] * w[i] }
                let p = 1 / (1 + Foundation.exp(-z))
                let r = p - (label ? 1 : 0)
                let h = p * (1 - p)
                for i in 0..<dim {
                    gradient[i] += r * row[i] / n
                    for j in i..<dim { hessian[i * dim + j] += h * row[i] * row[j] / n }
                }
            }
            for i in 0..<dim {
                for j in 0..<i { hessian[i * dim + j] = hessian[j * dim + i] }
                let penalty = i < d ? ridge : 1e-9
                gradient[i] += (i < d ? l2 : 0) * w[i]
                hessian[i * dim + i] += penalty
            }
            let step = solve(hessian, gradient, dim)
            var size = 0.0
            for i in 0..<dim { w[i] -= step[i]; size += step[i] * step[i] }
            if size < 1e-20 { break }
        }
        return (Array(w[0..<d]), w[d])
    }

    /// Solves `a · x = b` for a symmetric positive-definite `a` (Gaussian elimination, partial pivoting).
    static func solve(_ a: [Double], _ b: [Double], _ n: Int) -> [Double] {
        var m = a, v = b
        for col in 0..<n {
            var pivot = col
            for r in (col + 1)..<max(n, col + 1) where abs(m[r * n + col]) > abs(m[pivot * n + col]) { pivot = r }
            if pivot != col {
                for k in 0..<n { m.swapAt(col * n + k, pivot * n + k) }
                v.swapAt(col, pivot)
            }
            let diagonal = m[col * n + col]
            guard abs(diagonal) > 1e-300 else { continue }
            for r in (col + 1)..<max(n, col + 1) {
                let f = m[r * n + col] / diagonal
                if f == 0 { continue }
                for k in col..<n { m[r * n + k] -= f * m[col * n + k] }
                v[r] -= f * v[col]
            }
        }
        var out = [Double](repeating: 0, count: n)
        for r in stride(from: n - 1, through: 0, by: -1) {
            var sum = v[r]
            for k in (r + 1)..<max(n, r + 1) { sum -= m[r * n + k] * out[k] }
            let diagonal = m[r * n + r]
            out[r] = abs(diagonal) > 1e-300 ? sum / diagonal : 0
        }
        return out
    }

    /// The held-out figures from each box's held-out probability.
    static func evaluate(_ photos: [PhotoBoxes], probabilities: [[Float]], threshold: Float) -> PhotoEvaluation {
        var pairs: [(p: Double, y: Double)] = []
        var ignored = 0
        var classifier = DetectionScore()
        var detectorAlone = DetectionScore()
        for (i, photo) in photos.enumerated() {
            for (j, label) in photo.labels.enumerated() {
                if let label { pairs.append((Double(probabilities[i][j]), label ? 1 : 0)) } else { ignored += 1 }
            }
            let boxes = photo.photoBoxes
            let confirmed = boxes.indices.filter { probabilities[i][$0] >= threshold }
                .sorted { probabilities[i][$0] > probabilities[i][$1] }
            classifier.add(photo.photo, boxes: confirmed.map { boxes[$0] })
            detectorAlone.add(photo.photo, boxes: boxes.indices.filter { photo.regions[$0].detectorScore >= 0.5 }.map { boxes[$0] })
        }
        let n = Double(max(pairs.count, 1))
        let base = pairs.map(\.y).reduce(0, +) / n
        let brier = pairs.map { ($0.p - $0.y) * ($0.p - $0.y) }.reduce(0, +) / n
        let baseBrier = pairs.map { (base - $0.y) * (base - $0.y) }.reduce(0, +) / n
        let logLoss = -pairs.map { $0.y * log(max($0.p, 1e-7)) + (1 - $0.y) * log(max(1 - $0.p, 1e-7)) }.reduce(0, +) / n
        var ece = 0.0
        for bin in 0..<10 {
            let members = pairs.filter { min(Int($0.p * 10), 9) == bin }
            guard !members.isEmpty else { continue }
            let confidence = members.map(\.p).reduce(0, +) / Double(members.count)
            let accuracy = members.map(\.y).reduce(0, +) / Double(members.count)
            ece += Double(members.count) / n * abs(confidence - accuracy)
        }
        let positives = pairs.filter { $0.y == 1 }.count
        return PhotoEvaluation(photos: photos.count, folds: 0, repeats: 1, seed: 0, boxes: pairs.count + ignored, faceBoxes: positives,
                               otherBoxes: pairs.count - positives, ignoredBoxes: ignored, brier: brier, baseRateBrier: baseBrier,
                               expectedCalibrationError: ece, logLoss: logLoss, classifier: classifier,
                               detectorAlone: detectorAlone, plattA: 1, plattB: 0)
    }
}
