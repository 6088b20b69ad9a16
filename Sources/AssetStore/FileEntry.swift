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

    init(path: String, size: Int, mtimeNanoseconds: Int64, rawPath: [UInt8]? = nil, changedNanoseconds: Int64 = 0) {
        self.path = path
        self.size = size
        self.mtimeNanoseconds = mtimeNanoseconds
        self.rawPath = rawPath
        self.changedNanoseconds = changedNanoseconds
    }
}
