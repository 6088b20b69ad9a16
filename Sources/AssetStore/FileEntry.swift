#if canImport(Glibc)
import Glibc
#endif

/// A file found by a walk of the library folder: a photo, or any other regular file, which
/// analysis then gives an `unanalysable` verdict.
public struct FileEntry: Sendable, Equatable {
    /// Relative to the root, `/`-separated. When the name's bytes are not valid UTF-8 this shows
    /// them with `\xHH` escapes (`FileTree.escaped`) and `rawPath` has the bytes.
    public let path: String
    public let size: Int
    public let mtimeNanoseconds: Int64
    /// The relative path's bytes when some component is not valid UTF-8; nil when `path` is them.
    public let rawPath: [UInt8]?
    /// When the walk read the file's directory, the latest of its modification and status-change
    /// times (a copy that keeps the source's mtime still gets a new ctime); 0 when the entry was
    /// taken from an earlier walk.
    let changedNanoseconds: Int64
    /// Which file this is and when its inode last changed (store migration 10): a rewrite in
    /// place that sets the modification time back (`touch -r`, a tool that keeps it) keeps the
    /// size and modification time, but not the change time; a file replaced by another of the same
    /// size and time has another inode.
    let stamp: FileStamp

    init(path: String, size: Int, mtimeNanoseconds: Int64, rawPath: [UInt8]? = nil, changedNanoseconds: Int64 = 0,
         stamp: FileStamp = FileStamp(ctimeNanoseconds: 0, inode: 0, device: 0)) {
        self.path = path
        self.size = size
        self.mtimeNanoseconds = mtimeNanoseconds
        self.rawPath = rawPath
        self.changedNanoseconds = changedNanoseconds
        self.stamp = stamp
    }
}

/// What tells one version of a file from another besides its size and modification time: its
/// status-change time (st_ctime, which no program can set back: writing the file, or setting its
/// modification time, or its mode, moves it to now), its inode and its device.
struct FileStamp: Sendable, Equatable {
    var ctimeNanoseconds: Int64
    var inode: UInt64
    var device: UInt64

    /// The stamp of a stat(2) answer.
    init(_ info: stat) {
        ctimeNanoseconds = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        inode = UInt64(info.st_ino)
        device = UInt64(info.st_dev)
    }

    init(ctimeNanoseconds: Int64, inode: UInt64, device: UInt64) {
        self.ctimeNanoseconds = ctimeNanoseconds
        self.inode = inode
        self.device = device
    }

    /// The stamp a row recorded (`ctime_ns`, `inode`, `device`); nil when it has none (a row
    /// from before store migration 10, until a scan reads its folder).
    init?(ctime: SQLValue, inode: SQLValue, device: SQLValue) {
        guard let ctime = ctime.int, let inode = inode.int, let device = device.int else { return nil }
        self.init(ctimeNanoseconds: Int64(ctime), inode: UInt64(bitPattern: Int64(inode)), device: UInt64(bitPattern: Int64(device)))
    }

    /// The three columns' values, inode and device as signed 64-bit bit patterns.
    var values: [SQLValue] {
        [.integer(ctimeNanoseconds), .integer(Int64(bitPattern: inode)), .integer(Int64(bitPattern: device))]
    }
}
