/// How a classifier did on a set of labelled samples: the confusion counts and the rates from them.
public struct HeldOutMetrics: Codable, Sendable, Equatable {
    /// Faces scored as faces.
    public var truePositives: Int
    /// Non-faces scored as faces.
    public var falsePositives: Int
    /// Non-faces scored as non-faces.
    public var trueNegatives: Int
    /// Faces scored as non-faces.
    public var falseNegatives: Int

    /// Metrics from confusion counts.
    public init(truePositives: Int, falsePositives: Int, trueNegatives: Int, falseNegatives: Int) {
        self.truePositives = truePositives
        self.falsePositives = falsePositives
        self.trueNegatives = trueNegatives
        self.falseNegatives = falseNegatives
    }

    /// Metrics comparing `predicted` with `actual`, position by position.
    public init(predicted: [Bool], actual: [Bool]) {
        precondition(predicted.count == actual.count)
        var tp = 0, fp = 0, tn = 0, fn = 0
        for (guess, truth) in zip(predicted, actual) {
            switch (guess, truth) {
            case (true, true): tp += 1
            case (true, false): fp += 1
            case (false, false): tn += 1
            case (false, true): fn += 1
            }
        }
        self.init(truePositives: tp, falsePositives: fp, trueNegatives: tn, falseNegatives: fn)
    }

    /// Samples counted.
    public var count: Int { truePositives + falsePositives + trueNegatives + falseNegatives }
    /// Faces among them.
    public var positives: Int { truePositives + falseNegatives }
    /// Non-faces among them.
    public var negatives: Int { trueNegatives + falsePositives }
    /// Share scored correctly; 0 when empty.
    public var accuracy: Double { ratio(truePositives + trueNegatives, count) }
    /// Share of face calls that were faces; 0 when nothing was called a face.
    public var precision: Double { ratio(truePositives, truePositives + falsePositives) }
    /// Share of faces called faces; 0 when there were no faces.
    public var recall: Double { ratio(truePositives, positives) }
    /// Harmonic mean of precision and recall; 0 when both are 0.
    public var f1: Double {
        let sum = precision + recall
        return sum > 0 ? 2 * precision * recall / sum : 0
    }

    /// `accuracy 0.975  precision 0.960  recall 1.000  F1 0.980  (n=40: tp 24 fp 1 tn 15 fn 0)`.
    public var summary: String {
        func three(_ value: Double) -> String {
            let thousandths = Int((value * 1000).rounded())
            let text = String(thousandths % 1000)
            return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - text.count) + text
        }
        return "accuracy \(three(accuracy))  precision \(three(precision))  recall \(three(recall))  F1 \(three(f1))"
            + "  (n=\(count): tp \(truePositives) fp \(falsePositives) tn \(trueNegatives) fn \(falseNegatives))"
    }

    private enum CodingKeys: String, CodingKey {
        case truePositives, falsePositives, trueNegatives, falseNegatives, accuracy, precision, recall, f1
    }

    /// Reads the four counts; the rates in the file, if any, are recomputed rather than trusted.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(truePositives: try container.decode(Int.self, forKey: .truePositives),
                  falsePositives: try container.decode(Int.self, forKey: .falsePositives),
                  trueNegatives: try container.decode(Int.self, forKey: .trueNegatives),
                  falseNegatives: try container.decode(Int.self, forKey: .falseNegatives))
    }

    /// Writes the four counts and, for people reading the file, the four rates.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(truePositives, forKey: .truePositives)
        try container.encode(falsePositives, forKey: .falsePositives)
        try container.encode(trueNegatives, forKey: .trueNegatives)
        try container.encode(falseNegatives, forKey: .falseNegatives)
        try container.encode(accuracy, forKey: .accuracy)
        try container.encode(precision, forKey: .precision)
        try container.encode(recall, forKey: .recall)
        try container.encode(f1, forKey: .f1)
    }

    private func ratio(_ part: Int, _ whole: Int) -> Double {
        whole > 0 ? Double(part) / Double(whole) : 0
    }
}
