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

/// The lists of a dry run, in the order they are told.
public enum DryRunGroup: Sendable, Equatable {
    case analyse, upload, heldBack, skipped
}

/// How many entries a dry run told per list.
public struct DryRunCounts: Sendable, Equatable {
    public var analyse = 0
    public var upload = 0
    public var heldBack = 0
    public var skipped = 0
}

extension AssetStore {
    /// What a scan followed by a full run would do, within `filter`, with neither the store nor
    /// the library touched, collected into one value (for tests and small libraries; the commands
    /// stream, `dryRun(includeUnanalysable:heldBackByName:analyseLimit:visit:)`).
    public func dryRun(includeUnanalysable: Bool) throws(StoreError) -> DryRunPlan {
        var plan = DryRunPlan()
        _ = try dryRun(includeUnanalysable: includeUnanalysable) { group, entry in
            switch group {
            case .analyse: plan.analyse.append(entry)
            case .upload: plan.upload.append(entry)
            case .heldBack: plan.heldBack.append(entry)
            case .skipped: plan.skipped.append(ScanProblem(path: entry.path, message: entry.reason))
            }
        }
        return plan
    }

    /// What a scan followed by a full run would do, told entry by entry to `visit`: the files it
    /// would analyse, then those it would upload (those waiting now, then those analysed first),
    /// those held back, and the entries a scan would skip, each list in path order.
    ///
    /// Nothing is held for the whole library: the folders a scan would read are walked (those
    /// unchanged since the last scan are taken from the store, as `scan` takes them), and the
    /// store's rows are streamed once per list, so memory follows what changed on disk, not the
    /// library's size. `includeUnanalysable`: files with an `unanalysable` verdict would be
    /// uploaded. `heldBackByName`: a file not analysed yet that this says is no photo by its name
    /// would be held back rather than uploaded (its verdict will be `unanalysable`). At most
    /// `analyseLimit` analyses are told (wake's page); without `uploads` (analyze) neither uploads
    /// nor files held back are. Returns how many entries each list told.
    @discardableResult
    public func dryRun(includeUnanalysable: Bool, heldBackByName: ((String) -> Bool)? = nil, analyseLimit: Int = .max,
                       uploads: Bool = true, visit: (DryRunGroup, DryRunPlan.Entry) -> Void) throws(StoreError) -> DryRunCounts {
        let started = FileTree.now()
        let folders: FolderRecord? = try withDatabase { (db) throws(StoreError) -> FolderRecord? in
            try FolderRecord.load(db, now: started, fullWalkAfter: Self.fullWalkInterval)
        }
        let walk = try FileTree.walk(root: root, excluding: ownFiles, includeHidden: try includesHidden()) { directory in
            folders?.known(directory)
        }
        // Rows in folders the walk did not read stand as they are, as in a scan.
        let unread = Set(walk.directories.lazy.filter { !$0.read }.map(\.path))
        var walked: [String: FileEntry] = [:]
        for file in walk.files { walked[file.path] = file }
        // The walked files with no row (new), in path order; found by one pass over the rows.
        var unmatched = walked
        try withDatabase { (db) throws(StoreError) in
            try db.forEach("SELECT path FROM assets") { r in unmatched.removeValue(forKey: r[0].string ?? "") }
        }
        let newFiles = unmatched.keys.filter { filter.matches($0) }.sorted()
        unmatched = [:]

        /// What the plan makes of one path: the reason it would be analysed (nil: it would not),
        /// and its upload state once analysed.
        enum Fate {
            case analyse(reason: String)
            case waiting(unanalysable: Bool)
        }
        func fate(path: String, row: (size: Int, mtime: Int64, analysed: Bool, uploaded: Bool, failed: Bool, unanalysable: Bool)?) -> Fate? {
            guard let row else { return .analyse(reason: "new") }
            if !unread.contains(FolderRecord.parent(of: path)) {
                guard let file = walked[path] else { return nil }   // gone from a folder the walk read
                if row.size != file.size || row.mtime != file.mtimeNanoseconds { return .analyse(reason: "changed since it was scanned") }
            }
            if !row.analysed { return .analyse(reason: "not analysed yet") }
            guard !row.uploaded, !row.failed else { return nil }
            return .waiting(unanalysable: row.unanalysable)
        }
        /// Every path with its fate, in path order: the rows streamed, the new files merged in.
        func eachFate(_ body: (String, Fate) -> Void) throws(StoreError) {
            var next = newFiles.makeIterator()
            var pending = next.next()
            try withDatabase { (db) throws(StoreError) in
                try db.forEach("""
                    SELECT path, size, mtime_ns, analyzed_at IS NOT NULL, uploaded_at IS NOT NULL, failed, label = ? FROM assets ORDER BY path
                    """, [.text(AssetRecord.unanalysableLabel)]) { r in
                    let path = r[0].string ?? ""
                    while let new = pending, new < path {
                        body(new, .analyse(reason: "new"))
                        pending = next.next()
                    }
                    guard filter.matches(path) else { return }
                    let row = (size: r[1].int ?? 0, mtime: Int64(r[2].int ?? 0), analysed: (r[3].int ?? 0) != 0,
                               uploaded: (r[4].int ?? 0) != 0, failed: (r[5].int ?? 0) != 0, unanalysable: (r[6].int ?? 0) != 0)
                    if let fate = fate(path: path, row: row) { body(path, fate) }
                }
            }
            while let new = pending {
                body(new, .analyse(reason: "new"))
                pending = next.next()
            }
        }
        var counts = DryRunCounts()
        func tell(_ group: DryRunGroup, _ entry: DryRunPlan.Entry) {
            visit(group, entry)
            switch group {
            case .analyse: counts.analyse += 1
            case .upload: counts.upload += 1
            case .heldBack: counts.heldBack += 1
            case .skipped: counts.skipped += 1
            }
        }
        let byName = heldBackByName ?? { _ in false }
        try eachFate { path, fate in
            guard case .analyse(let reason) = fate, counts.analyse < analyseLimit else { return }
            tell(.analyse, DryRunPlan.Entry(path: path, reason: reason, afterAnalysis: true))
        }
        if uploads {
            try eachFate { path, fate in
                guard case .waiting(let unanalysable) = fate, includeUnanalysable || !unanalysable else { return }
                tell(.upload, DryRunPlan.Entry(path: path, reason: unanalysable ? "unanalysable, sent as it is" : "analysed, waiting for upload"))
            }
            try eachFate { path, fate in
                guard case .analyse(let reason) = fate, !byName(path) else { return }
                tell(.upload, DryRunPlan.Entry(path: path, reason: "once analysed (\(reason))", afterAnalysis: true))
            }
            try eachFate { path, fate in
                switch fate {
                case .waiting(let unanalysable) where unanalysable && !includeUnanalysable:
                    tell(.heldBack, DryRunPlan.Entry(path: path, reason: "unanalysable: not a photo PhotoDrain analyses"))
                case .analyse where byName(path):
                    tell(.heldBack, DryRunPlan.Entry(path: path, reason: "not a photo by its name: it will be unanalysable", afterAnalysis: true))
                default:
                    break
                }
            }
        }
        for problem in walk.problems where filter.matches(problem.path) {
            tell(.skipped, DryRunPlan.Entry(path: problem.path, reason: problem.message))
        }
        return counts
    }
}
