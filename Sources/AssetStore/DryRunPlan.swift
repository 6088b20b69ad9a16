/// What a runner would do to a library now, worked out without writing anything: the files it
/// would analyse, the ones it would upload, the ones held back, and the entries a scan would skip.
public struct DryRunPlan: Sendable, Equatable {
    /// One file and why it is in its list.
    public struct Entry: Sendable, Equatable, Codable {
        /// Relative to the library root.
        public let path: String
        /// Why, in words: "new", "changed since its analysis", "not analysed yet", ...
        public let reason: String
        /// True for a file that is not analysed yet: its upload depends on the verdict to come
        /// (an `unanalysable` verdict holds it back).
        public let afterAnalysis: Bool

        /// An entry.
        public init(path: String, reason: String, afterAnalysis: Bool = false) {
            self.path = path
            self.reason = reason
            self.afterAnalysis = afterAnalysis
        }
    }

    /// Files that would be analysed, by path.
    public var analyse: [Entry] = []
    /// Files that would be uploaded, by path: those waiting now, then those analysed first.
    public var upload: [Entry] = []
    /// Files with an `unanalysable` verdict that would stay put.
    public var heldBack: [Entry] = []
    /// Entries a scan would leave out, and why.
    public var skipped: [ScanProblem] = []
}

extension AssetStore {
    /// What a scan followed by a full run would do, within `filter`, with neither the store nor
    /// the library touched: the folder is walked and compared with the rows in memory.
    /// `includeUnanalysable` says whether files with an `unanalysable` verdict would be uploaded.
    public func dryRun(includeUnanalysable: Bool) throws(StoreError) -> DryRunPlan {
        let (files, problems) = try FileTree.walk(root: root, excluding: ownFiles, includeHidden: try includesHidden())
        let rows = try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT \(AssetRecord.columns) FROM assets").map(AssetRecord.init(row:))
        }
        var known: [String: AssetRecord] = [:]
        for row in rows { known[row.path] = row }
        var plan = DryRunPlan(skipped: problems.filter { filter.matches($0.path) })
        var waiting: [DryRunPlan.Entry] = []
        var afterAnalysis: [DryRunPlan.Entry] = []
        for file in files where filter.matches(file.path) {
            let reason: String
            if let row = known[file.path] {
                if row.size != file.size || row.mtimeNanoseconds != file.mtimeNanoseconds {
                    reason = "changed since it was scanned"
                } else if row.analyzedAt == nil {
                    reason = "not analysed yet"
                } else {
                    guard row.uploadedAt == nil, !row.failed else { continue }
                    if row.isUnanalysable && !includeUnanalysable {
                        plan.heldBack.append(DryRunPlan.Entry(path: file.path, reason: "unanalysable: not a photo PhotoDrain analyses"))
                    } else {
                        waiting.append(DryRunPlan.Entry(path: file.path, reason: row.isUnanalysable ? "unanalysable, sent as it is" : "analysed, waiting for upload"))
                    }
                    continue
                }
            } else {
                reason = "new"
            }
            plan.analyse.append(DryRunPlan.Entry(path: file.path, reason: reason, afterAnalysis: true))
            afterAnalysis.append(DryRunPlan.Entry(path: file.path, reason: "once analysed (\(reason))", afterAnalysis: true))
        }
        plan.upload = waiting + afterAnalysis
        return plan
    }
}
