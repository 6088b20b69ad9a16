import AssetStore
import Drain
import FaceAnalysis
import PhotoAnalysis
import SystemSupport

extension PeopleCommand {
    /// Gives the faces banked without an embedding theirs before a clustering pass
    /// (`FaceEmbeddingPass`), with a progress bar by photo; says what it did on stderr unless
    /// `quiet`. Does nothing when every face has one. Throws the store's error.
    @discardableResult
    static func embedWaitingFaces(_ store: AssetStore, embedder: any FaceEmbedder, maxPixels: Int? = nil, slots: Int,
                                  quiet: Bool, command: String) async throws -> FaceEmbeddingPass.Tally? {
        let photos = try store.photosToEmbedCount(minimumFaceSize: FaceChip.minimumFaceSize)
        guard photos > 0 else { return nil }
        let bar = ProgressBar(title: "embedding faces", total: photos, quiet: quiet)
        let pass = FaceEmbeddingPass(store: store, embedder: embedder, maxPixels: maxPixels, slots: slots)
        let tally = try await onOwnThreadUntilDone("photodrain-embed") {
            Result { () throws(StoreError) -> FaceEmbeddingPass.Tally in try pass.run { _ in bar.advance() } }
        }.get()
        bar.finish()
        let console = Console.shared
        if !quiet {
            var line = "photodrain \(command): embedded \(tally.faces) face\(tally.faces == 1 ? "" : "s") of \(tally.photos) photo\(tally.photos == 1 ? "" : "s") analysed before their faces had descriptors"
            if tally.changed > 0 { line += "; \(tally.changed) changed since, left for their next analysis" }
            console.err(line)
        }
        if tally.failed > 0, let reason = tally.lastFailure {
            console.err("photodrain \(command): \(tally.failed) photo\(tally.failed == 1 ? "" : "s") could not be embedded (last: \(reason)); analysing them again gives their faces descriptors")
        }
        return tally
    }
}
