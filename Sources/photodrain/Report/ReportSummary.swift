import AssetStore

/// The totals at the top of the report, counted from the same entries the cards show.
struct ReportSummary: Sendable, Equatable {
    /// Every photo in the store.
    var photos = 0
    /// Photos by upload state.
    var byState: [AssetRecord.State: Int] = [:]
    /// Photos by the label filter's value.
    var byLabel: [ReportEntry.Label: Int] = [:]
    /// Files analysed as not photos and neither uploaded nor failed: held back from upload, and
    /// counted apart from "analysed, not uploaded" as `photodrain status` counts them.
    var unanalysableHeldBack = 0
    /// Photos with a verdict (an undecodable photo's verdict included).
    var analysed = 0
    /// Boxes the classifier confirmed, over all photos.
    var confirmedFaces = 0
    /// Boxes the classifier rejected, over all photos.
    var rejectedBoxes = 0
    /// Photos with at least one confirmed face.
    var photosWithFaces = 0
    /// The sum of every verdict's `milliseconds`: the time spent analysing.
    var analysisMilliseconds = 0.0
    /// The models and cascades the verdicts name, sorted.
    var models: [String] = []
    /// What `free-space` took off the library (the store's removals), when counted.
    var freed = AssetStore.RemovalSummary()
    /// The people page, when the library has people.
    var people: PeopleLink?

    /// The line that leads to the people page.
    struct PeopleLink: Sendable, Equatable {
        var people: Int
        var faces: Int
        /// The link from the single file or the index.
        var hrefFromIndex: String
        /// The link from a page of cards.
        var hrefFromPage: String
    }

    /// Photos analysed and waiting for upload, as `photodrain status` counts them: not the files
    /// held back as not photos.
    var analysedNotUploaded: Int { (byState[.analyzed] ?? 0) - unanalysableHeldBack }

    /// Counts `entries`.
    init(entries: [ReportEntry]) {
        var models = Set<String>()
        for entry in entries {
            photos += 1
            byState[entry.record.state, default: 0] += 1
            byLabel[entry.label, default: 0] += 1
            if entry.record.state == .analyzed && entry.record.isUnanalysable { unanalysableHeldBack += 1 }
            guard let verdict = entry.verdict else { continue }
            analysed += 1
            confirmedFaces += entry.confirmedFaces
            rejectedBoxes += entry.rejectedBoxes
            if entry.confirmedFaces > 0 { photosWithFaces += 1 }
            analysisMilliseconds += verdict.milliseconds
            if let model = verdict.model { models.insert(model) }
            if let detector = verdict.detector ?? verdict.cascade { models.insert(detector) }
        }
        self.models = models.sorted()
    }

    /// Photos analysed per second of analysis time (what one slot achieves); nil before any analysis.
    var photosPerSecond: Double? {
        analysisMilliseconds > 0 ? Double(analysed) / (analysisMilliseconds / 1000) : nil
    }

    /// Mean analysis time per analysed photo, in milliseconds; nil before any analysis.
    var meanMilliseconds: Double? {
        analysed > 0 ? analysisMilliseconds / Double(analysed) : nil
    }
}
