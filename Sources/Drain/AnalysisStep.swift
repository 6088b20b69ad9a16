import AssetStore
import PhotoAnalysis

/// One photo's analysis within the memory budget, the step the runner's analysis slots take
/// (`DrainRunner+Slots.swift`: `drain`, and `analyze` and `wake` through it): the budget is a slot's
/// share of the headroom, or all of it for a photo analysed alone (after the analyser has handed
/// back its idle memory); a photo that does not fit its share must be analysed alone, except
/// where the runner has one analysis slot, which is alone already and tries again at once; one
/// that does not fit alone is deferred, and a verdict is banked on its row. The slot reports the
/// outcome; the schedule queues a photo waiting to be analysed alone.
struct AnalysisStep {
    /// What came of the step.
    enum Outcome {
        /// The verdict was made and banked (false: the row had moved on, as `bankVerdict` says).
        case banked(AnalysedPhoto, banked: Bool, milliseconds: Double)
        /// It did not fit a slot's share: analyse it alone, once no other analysis runs.
        case needsAlone
        /// It did not fit all the headroom either.
        case deferred(reason: String, needs: Int)
    }

    let store: AssetStore
    let analyzer: any PhotoAnalyzing
    let memory: MemoryGuard
    /// How many analyses may run at once: a slot's share of the headroom is 1/slots of it.
    let slots: Int

    /// Analyses `asset` (claimed by the caller) and banks its verdict. Throws the store's error.
    func run(_ asset: AssetRecord, alone startsAlone: Bool) throws(StoreError) -> Outcome {
        let clock = ContinuousClock()
        let start = clock.now
        var alone = startsAlone
        var result: AnalysisResult
        while true {
            if alone { analyzer.releaseIdleMemory() }
            let headroom = memory.read().headroom
            result = analyzer.analyze(path: store.absolutePath(of: asset), memoryBudget: alone ? headroom : headroom / max(slots, 1))
            // The only slot is alone already: try again at once, with the idle memory handed back.
            guard case .deferred = result, !alone, slots <= 1 else { break }
            alone = true
        }
        switch result {
        case .verdict(let analysed):
            let banked = try store.bankVerdict(analysed, for: asset)
            return .banked(analysed, banked: banked, milliseconds: (clock.now - start).milliseconds)
        case .deferred(let reason, let needs):
            return alone ? .deferred(reason: reason, needs: needs) : .needsAlone
        }
    }
}
