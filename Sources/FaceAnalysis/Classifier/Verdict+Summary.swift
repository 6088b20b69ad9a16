import Foundation

/// The forms derived from a verdict that the store indexes and uploads carry. They live here, on
/// the one type, so the store's columns, the upload's summary and the readers cannot disagree.
extension Verdict {
    /// The boxes the classifier confirmed as faces (the store's `face_count`).
    public var confirmedFaces: Int { faces.filter(\.confirmed).count }

    /// The boxes the detector proposed that the classifier rejected.
    public var rejectedBoxes: Int { faces.count - confirmedFaces }

    /// The score as the store indexes it and `status`, `verdicts` and `analyze --json` print it:
    /// to 4 decimal places; nil for a photo that has no analysis (`error`, `unanalysable`).
    public var indexedScore: Double? {
        guard error == nil else { return nil }
        return (Double(score) * 10_000).rounded() / 10_000
    }

    /// The verdict without its boxes, for a destination with no room for them (S3's 2 KB of
    /// metadata, where a group photo's every box does not fit); the whole verdict stays in the
    /// store. Its JSON is the one receivers have always been sent: label, score, model, detector,
    /// cascade, version, error, the number of boxes and of confirmed faces, `"summary": true`.
    public struct Summary: Codable, Sendable, Equatable {
        /// Always true: tells a reader this is not the whole verdict.
        public var summary: Bool
        /// The photo-level outcome.
        public var label: Label
        /// The highest box probability.
        public var score: Float
        /// The model's identifier; nil on error.
        public var model: String?
        /// The detector's identifier; nil on error.
        public var detector: String?
        /// The cascade's identifier when a cascade found the boxes.
        public var cascade: String?
        /// The verdict's layout version.
        public var version: Int
        /// Why the photo has no analysis.
        public var error: Failure?
        /// How many boxes the whole verdict records.
        public var boxes: Int
        /// How many of them are confirmed faces.
        public var faces: Int
        /// The person ids of its faces (`people` on the whole verdict), without their names;
        /// absent when none has a person.
        public var people: [Int64]?
    }

    /// This verdict's summary (see `Summary`).
    public var summary: Summary {
        Summary(summary: true, label: label, score: score, model: model, detector: detector, cascade: cascade,
                version: version, error: error, boxes: faces.count, faces: confirmedFaces, people: people?.map(\.person))
    }

    /// The summary as compact JSON with sorted keys, like `json()`. Throws `malformedVerdict` when
    /// a value is not finite.
    public func summaryJSON() throws(FaceAnalysisError) -> String {
        try Self.compactJSON(summary)
    }

    /// `value` as compact JSON with sorted keys and unescaped slashes: stable for a given value.
    static func compactJSON(_ value: some Encodable) throws(FaceAnalysisError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw FaceAnalysisError(.malformedVerdict, "the verdict cannot be encoded (a value is not finite)",
                                    cause: "\(error)")
        }
    }
}
