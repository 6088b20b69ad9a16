import AssetStore
import Drain
import FaceAnalysis

/// One photo as the report shows it: its row, its parsed verdict, and the thumbnail's outcome.
struct ReportEntry: Sendable {
    /// What the report's label filter calls a photo.
    enum Label: String, Sendable, CaseIterable {
        /// At least one confirmed face.
        case faces
        /// Analysed; no confirmed face.
        case noFaces = "no-faces"
        /// Could not be analysed (undecodable), or its verdict cannot be read.
        case error
        /// Not a photo PhotoDrain analyses (a video, a raw, a document): no error, just not a photo.
        case unanalysable
        /// A photo's companion file (its Live Photo video, edit list or sidecar).
        case companion
        /// Not analysed yet.
        case pending

        /// The words the page uses for it.
        var title: String {
            switch self {
            case .faces: "faces"
            case .noFaces: "no faces"
            case .error: "error"
            case .unanalysable: "not a photo"
            case .companion: "companion file"
            case .pending: "not analysed"
            }
        }
    }

    /// The store's row.
    let record: AssetRecord
    /// The banked verdict, when there is one and it parses.
    let verdict: Verdict?
    /// Why the banked verdict could not be read, when it could not.
    let verdictProblem: String?
    /// The people in the photo, in face order, once each.
    var people: [ReportPeople.Tag] = []
    /// The people page's link from where this card is (nil: the report has no people page).
    var peoplePage: String?

    /// Reads the row's verdict JSON; a verdict that does not parse becomes `verdictProblem`.
    init(record: AssetRecord) {
        self.record = record
        do {
            verdict = try record.verdict()
            verdictProblem = nil
        } catch {
            verdict = nil
            verdictProblem = "the stored verdict cannot be read: \(error.message)"
        }
    }

    /// The label filter's value for this photo.
    var label: Label {
        if record.label == AssetRecord.companionLabel { return .companion }
        if verdictProblem == nil && (record.isUnanalysable || verdict?.label == .unanalysable) { return .unanalysable }
        if verdictProblem != nil || record.analysisError != nil { return .error }
        guard let verdict else { return .pending }
        switch verdict.label {
        case .faces: return .faces
        case .noFaces: return .noFaces
        case .error: return .error
        case .unanalysable: return .unanalysable
        }
    }

    /// Boxes the classifier confirmed as faces.
    var confirmedFaces: Int { verdict?.confirmedFaces ?? 0 }

    /// Boxes the cascade proposed that the classifier rejected.
    var rejectedBoxes: Int { verdict?.rejectedBoxes ?? 0 }

    /// Why the photo could not be analysed, in words: the verdict's error, else the row's code.
    var analysisProblem: String? {
        if let verdictProblem { return verdictProblem }
        if let failure = verdict?.error { return "\(failure.code): \(failure.message)" }
        return record.analysisError.map { "cannot be decoded (\($0))" }
    }
}
