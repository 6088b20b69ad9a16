/// What a scan found, compared with the rows it read: the middle step of a scan (walk → diff →
/// apply), a value made without the database, so the rules of what counts as a change are tested
/// on their own (`ScanDiffTests`).
struct ScanDiff {
    /// A row as the comparison needs it.
    struct Known: Equatable {
        var id: Int64
        var size: Int
        var mtimeNanoseconds: Int64
        /// Nil for a row from before store migration 10 (no stamp recorded).
        var stamp: FileStamp?
        /// The digest analysis banked, if any.
        var sha256: String?
    }

    /// A walked file's fate, in walk order.
    enum Change: Equatable {
        /// No row yet.
        case added(FileEntry)
        /// Its row's version is over: the file's bytes (may) differ.
        case modified(id: Int64, FileEntry)
        /// Same bytes under a new stamp (or a row from before stamps): only the stamp is recorded.
        case restamped(id: Int64, FileStamp)
    }

    var changes: [Change] = []
    /// Rows whose file the walk did not find, by path order.
    var removed: [(path: String, id: Int64)] = []
    /// Files changed so recently they may still be being written: left for a later scan.
    var settling: [String] = []
    /// How many of `settling` have no row yet.
    var settlingNew = 0
    /// Folders holding a file whose stamp changed that the scan could not hash: read again next time.
    var unhashed: Set<String> = []

    /// Compares the walked `files` with the `known` rows of the folders the walk read, taking the
    /// rows out of `known` as they match (so a large library's rows are held once, not copied).
    /// `digests` are the restamped files' new digests (`AssetStore.restampedDigests`);
    /// `stillChanging` says whether a file changed within the quiet period.
    static func between(known unmatched: inout [String: Known], files: [FileEntry], digests: [String: AssetStore.Rehashed],
                        stillChanging: (FileEntry) -> Bool) -> ScanDiff {
        var diff = ScanDiff()
        for file in files {
            guard let row = unmatched.removeValue(forKey: file.path) else {
                if stillChanging(file) {
                    diff.settling.append(file.path)
                    diff.settlingNew += 1
                } else {
                    diff.changes.append(.added(file))
                }
                continue
            }
            if row.size == file.size && row.mtimeNanoseconds == file.mtimeNanoseconds {
                // Same size and time: the same bytes unless the stamp says otherwise.
                if let stamp = row.stamp, stamp == file.stamp { continue }
                let sameBytes: Bool?
                if row.stamp == nil {
                    sameBytes = true    // a row from before stamps were kept: recorded, not hashed
                } else if let banked = row.sha256 {
                    switch digests[file.path] {
                    case .digest(let digest)?: sameBytes = digest == banked
                    case .unreadable?: sameBytes = false
                    case nil: sameBytes = nil
                    }
                } else {
                    sameBytes = false   // no digest banked to compare with: it is new work anyway
                }
                if sameBytes == nil {
                    diff.unhashed.insert(FolderRecord.parent(of: file.path))
                    continue
                }
                if sameBytes == true {
                    diff.changes.append(.restamped(id: row.id, file.stamp))
                    continue
                }
            }
            if stillChanging(file) {
                diff.settling.append(file.path)
                continue
            }
            diff.changes.append(.modified(id: row.id, file))
        }
        // Rows in folders the walk read that it did not find are gone.
        diff.removed = unmatched.sorted { $0.key < $1.key }.map { ($0.key, $0.value.id) }
        unmatched = [:]
        return diff
    }
}
