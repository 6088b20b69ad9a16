#if canImport(Glibc)
import Glibc
#endif

/// The result of a walk: the files of the directories it read, the problems (with those an
/// earlier walk's answers carried), every directory gone through, and how many of them were read.
struct Walk: Sendable {
    var files: [FileEntry] = []
    var problems: [ScanProblem] = []
    var directories: [WalkedDirectory] = []
    var directoriesRead = 0
}

/// A directory a walk went through: where it is, what stat(2) said of it when the walk met it
/// (its identity, modification time and status-change time), the names (bytes) of its entries that are directories,
/// in the order the walk met them, and whether the walk read it or took an earlier walk's answer.
struct WalkedDirectory: Sendable, Equatable {
    /// Relative to the root, as `FileEntry.path` shows paths; empty for the root itself.
    let path: String
    let device: UInt64
    let inode: UInt64
    let mtimeNanoseconds: Int64
    /// st_ctime: moves with the modification time, and also when that is set back (`touch -d`,
    /// `rsync -t`), which no one can do to this one.
    let ctimeNanoseconds: Int64
    var subdirectories: [[UInt8]] = []
    var read = false
    /// Entries whose names start with a dot that the walk left out of this folder.
    var hidden = 0
    /// Whether the folder held a symbolic link (or an entry whose type readdir did not say) when
    /// read: a link's target can come, go or change without the folder's times moving, so such a
    /// folder is never taken from the record.
    var holdsLinks = false

    init(path: String, device: UInt64, inode: UInt64, mtimeNanoseconds: Int64, ctimeNanoseconds: Int64) {
        self.path = path
        self.device = device
        self.inode = inode
        self.mtimeNanoseconds = mtimeNanoseconds
        self.ctimeNanoseconds = ctimeNanoseconds
    }

    /// The directory at `path` as stat(2) described it when the walk met it.
    init(path: String, info: stat) {
        self.init(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), mtimeNanoseconds: FileTree.mtime(info),
                  ctimeNanoseconds: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
    }
}

/// What an earlier walk found directly in one directory: enough for a walk to go on without
/// reading it again.
struct KnownDirectory: Sendable {
    /// The names (bytes) of its entries that were directories, in the order that walk met them.
    var subdirectories: [[UInt8]]
    /// Its other entries that were left out, with why (not the subdirectories' own problems).
    var problems: [ScanProblem]
    /// Its hidden entries that were left out.
    var hidden = 0
}
