import AssetStore
import FaceAnalysis
import Foundation
import PhotoAnalysis
import Synchronization

/// Gives the faces banked without an embedding theirs (issue 36): faces of photos analysed before
/// descriptors existed, or with `--people off`, would otherwise stay out of people until their
/// photo changed. Each such photo is read again, kept only while its digest is the one its verdict
/// was made from, decoded at its verdict's size, and its faces embedded as analysis embeds them
/// (`FacePipeline.embeddings(of:verdict:sha256:embedder:)`); its verdict is not redone, so its
/// uploads are not held back. `people` and an `analyze` run that finishes the library run it
/// before clustering.
public struct FaceEmbeddingPass: Sendable {
    /// What a pass did.
    public struct Tally: Sendable, Equatable {
        /// Photos whose faces got embeddings.
        public var photos = 0
        /// Faces that got one.
        public var faces = 0
        /// Photos changed since their verdict: their next analysis embeds them.
        public var changed = 0
        /// Photos that could not be embedded, and the last reason.
        public var failed = 0
        public var lastFailure: String?

        public init() {}
    }

    let store: AssetStore
    let embedder: any FaceEmbedder
    let maxPixels: Int?
    let slots: Int
    /// Photos read at a time; memory holds one page.
    let pageSize = 32

    /// `maxPixels`: the decoder's limit analysis used (`AnalysisSettings.maxPixels`; nil: the default).
    public init(store: AssetStore, embedder: any FaceEmbedder, maxPixels: Int? = nil, slots: Int) {
        self.store = store
        self.embedder = embedder
        self.maxPixels = maxPixels
        self.slots = max(1, slots)
    }

    /// Embeds every photo the store lists, `slots` at a time, handing the tally to `progress`
    /// after each photo. Throws the store's error (the faces embedded before it stay).
    public func run(progress: @Sendable (Tally) -> Void = { _ in }) throws(StoreError) -> Tally {
        let tally = Mutex(Tally())
        let failure = Mutex<StoreError?>(nil)
        var after: Int64 = 0
        while failure.withLock({ $0 == nil }) {
            let page = try store.photosWithFacesToEmbed(after: after, limit: pageSize, minimumFaceSize: FaceChip.minimumFaceSize)
            guard let last = page.last else { break }
            after = last.assetID
            let next = Atomic(0)
            DispatchQueue.concurrentPerform(iterations: min(slots, page.count)) { _ in
                while failure.withLock({ $0 == nil }) {
                    let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < page.count else { return }
                    let photo = page[index]
                    let outcome: FaceEmbeddingOutcome
                    do {
                        let verdict = try Verdict.decode(json: photo.verdictJSON)
                        outcome = FacePipeline.embeddings(of: store.root + "/" + photo.path, verdict: verdict, sha256: photo.sha256,
                                                          embedder: embedder, maxPixels: maxPixels)
                    } catch {
                        outcome = .failed("its verdict cannot be read: \(error)")
                    }
                    var stored = 0
                    if case .embedded(let embeddings) = outcome {
                        do throws(StoreError) {
                            stored = try store.storeEmbeddings(embeddings, assetID: photo.assetID, sha256: photo.sha256)
                        } catch {
                            failure.withLock { $0 = $0 ?? error }
                            return
                        }
                    }
                    let now = tally.withLock { t -> Tally in
                        switch outcome {
                        case .embedded:
                            t.photos += 1
                            t.faces += stored
                        case .changed: t.changed += 1
                        case .failed(let reason):
                            t.failed += 1
                            t.lastFailure = "\(photo.path): \(reason)"
                        }
                        return t
                    }
                    progress(now)
                }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return tally.withLock { $0 }
    }
}
