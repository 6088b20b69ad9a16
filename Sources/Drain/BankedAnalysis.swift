import AssetStore
import FaceAnalysis
import PhotoAnalysis

/// Where the analysis stage's typed result meets the store, which knows no `Verdict`: the one
/// place that turns an `AnalysedPhoto` into a row's columns and a row's JSON back into a `Verdict`.
extension BankedVerdict {
    /// The row form of `analysed`: its verdict's JSON and the forms the store indexes (label,
    /// confirmed faces, score, error code), what analysis read of the file, and a face row per
    /// confirmed face (with its embedding when an embedder gave one).
    public init(_ analysed: AnalysedPhoto) {
        let verdict = analysed.verdict
        // The pipeline has checked its verdicts encode; a stub that does not still banks its label.
        let json = analysed.verdictJSON ?? "{\"label\":\"\(verdict.label.rawValue)\"}"
        self.init(json: json, label: verdict.label.rawValue, faceCount: verdict.confirmedFaces, score: verdict.indexedScore,
                  analysisError: verdict.error?.code, sha256: analysed.sha256, format: analysed.format?.rawValue,
                  width: analysed.uprightSize?.width, height: analysed.uprightSize?.height, captureDate: analysed.captureDate)
        let embeddings = analysed.faceEmbeddings
        faces = verdict.faces.filter(\.confirmed).enumerated().map { index, face in
            BankedFace(index: index, x: face.region.x, y: face.region.y, width: face.region.width, height: face.region.height,
                       keypoints: face.region.keypoints, embedding: embeddings.flatMap { index < $0.count && !$0[index].isEmpty ? $0[index] : nil })
        }
    }
}

extension AssetStore {
    /// Banks what analysing `asset` gave; see `bankVerdict(_:for:)` for when it is dropped.
    @discardableResult
    public func bankVerdict(_ analysed: AnalysedPhoto, for asset: AssetRecord) throws(StoreError) -> Bool {
        try bankVerdict(BankedVerdict(analysed), for: asset)
    }
}

extension AssetRecord {
    /// The row's banked verdict as the one `Verdict` type: nil when none is banked, or the row is
    /// a companion file (whose row holds only the link to its photo, `companionOf`). Throws
    /// `malformedVerdict` when the stored text is not a verdict.
    public func verdict() throws(FaceAnalysisError) -> Verdict? {
        guard let verdictJSON, label != AssetRecord.companionLabel else { return nil }
        return try Verdict.decode(json: verdictJSON)
    }
}
