/// What analysing one photo gave.
public enum AnalysisResult: Sendable, Equatable {
    /// The analysis to bank (for an undecodable photo, a terminal verdict holding its error).
    case verdict(AnalysedPhoto)
    /// Not analysed now: at the scale the detector wants, its analysis needs about `needs` bytes,
    /// more than the memory budget. Never analysed at a smaller scale instead (that verdict would
    /// find fewer faces and be banked as the photo's own): try later, with more memory.
    case deferred(reason: String, needs: Int)
}

/// Computes a photo's verdict. Never throws: a photo that cannot be analysed gets a terminal
/// verdict holding its error, so it is not retried until the file changes.
public protocol PhotoAnalyzing: Sendable {
    /// Analyses the photo at `path` within `memoryBudget` bytes (nil: no limit), or defers it when
    /// its analysis does not fit. The verdict must not depend on the budget.
    func analyze(path: String, memoryBudget: Int?) -> AnalysisResult
    /// Hands back memory the analyser holds between photos but can do without, before a photo
    /// that did not fit is tried again alone. The default holds none.
    func releaseIdleMemory()
}

extension PhotoAnalyzing {
    public func releaseIdleMemory() {}
}
