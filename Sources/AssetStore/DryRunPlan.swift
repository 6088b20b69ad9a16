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
        // What the plan needs of each row, streamed: not the whole record (its verdict JSON alone
        // is most of a large library's rows).
        typealias Row = (size: Int, mtimeNanoseconds: Int64, analysed: Bool, uploaded: Bool, failed: Bool, isUnanalysable: Bool)
        var known: [String: Row] = [:]
        try withDatabase { (db) throws(StoreError) in
            try db.forEach("""
                SELECT path, size, mtime_ns, analyzed_at IS NOT NULL, uploaded_at IS NOT NULL, failed, label = ? FROM assets
                """, [.text(AssetRecord.unanalysableLabel)]) { r in
                known[r[0].string ?? ""] = (r[1].int ?? 0, Int64(r[2].int ?? 0), (r[3].int ?? 0) != 0, (r[4].int ?? 0) != 0,
                                            (r[5].int ?? 0) != 0, (r[6].int ?? 0) != 0)
            }
        }
        var plan = DryRunPlan(skipped: problems.filter { filter.matches($0.path) })
        var waiting: [DryRunPlan.Entry] = []
        var afterAnalysis: [DryRunPlan.Entry] = []
        for file in files where filter.matches(file.path) {
            let reason: String
            if let row = known[file.path] {
                if row.size != file.size || row.mtimeNanoseconds != file.mtimeNanoseconds {
                    reason = "changed since it was scanned"
                } else if !row.analysed {
                    reason = "not analysed yet"
                } else {
                    guard !row.uploaded, !row.failed else { continue }
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
