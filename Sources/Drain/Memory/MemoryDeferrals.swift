/// The photos a run left unanalysed because their analysis, at the only scale analysis uses, did
/// not fit the memory headroom even with no other analysis in flight; and the least any of them
/// needs. A command compares that with the headroom of an idle process to tell "run again" (75)
/// from "no progress possible" (1).
public struct MemoryDeferrals: Sendable, Equatable {
    /// Photos left for later.
    public private(set) var count = 0
    /// The smallest estimated need among them, in bytes; nil when none was left.
    public private(set) var smallestNeed: Int?
    /// Why the last of them was left (the analyser's words).
    public private(set) var lastReason: String?

    public init() {}

    /// Counts one more photo left for later, whose analysis needs `needs` bytes, for `reason`.
    public mutating func record(needs: Int, reason: String) {
        count += 1
        smallestNeed = min(smallestNeed ?? needs, needs)
        lastReason = reason
    }
}
