/// Which kind of work a runner prefers when both wait.
public enum SlotBias: String, Sendable, CaseIterable {
    /// Ship analysed photos first; analyse only when nothing waits for upload (the drain's default).
    case uploadFirst = "upload-first"
    /// Bank verdicts first; upload only when nothing waits for analysis.
    case analysisFirst = "analysis-first"
}

/// How many of a runner's slots go to analysis and how many to upload.
public struct SlotPlan: Sendable, Equatable, CustomStringConvertible {
    public let analysis: Int
    public let upload: Int

    public init(analysis: Int, upload: Int) {
        self.analysis = analysis
        self.upload = upload
    }

    public static let idle = SlotPlan(analysis: 0, upload: 0)

    public var description: String { "analysis \(analysis), upload \(upload)" }
}

/// Splits `budget` slots between analysis and upload; called on every freed slot. Upload-first
/// (the default): while any analysed photo waits and the destination is reachable, every slot goes
/// to upload; analysis takes the slots only when there is nothing to upload or the network is down.
/// Upload work while offline gets no slot: it waits for the destination to come back.
public func planSlots(budget: Int, online: Bool, hasVisionWork: Bool, hasUploadWork: Bool,
                      bias: SlotBias = .uploadFirst) -> SlotPlan {
    guard budget > 0 else { return .idle }
    let canUpload = online && hasUploadWork
    switch bias {
    case .uploadFirst:
        if canUpload { return SlotPlan(analysis: 0, upload: budget) }
        if hasVisionWork { return SlotPlan(analysis: budget, upload: 0) }
    case .analysisFirst:
        if hasVisionWork { return SlotPlan(analysis: budget, upload: 0) }
        if canUpload { return SlotPlan(analysis: 0, upload: budget) }
    }
    return .idle
}
