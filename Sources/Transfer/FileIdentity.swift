import Foundation
import SystemSupport

/// Which version of which file an upload is sending, told apart across runs: the device and
/// inode say which file, the size and modification time which version of it. The absolute path
/// is kept for people reading a saved record; it plays no part in `isSameVersion(as:)` (a file
/// moved within its file system is still the same file).
public struct FileIdentity: Sendable, Equatable, Codable {
    /// The file's absolute path when it was examined.
    public var path: String
    /// `st_dev` of the file system holding it.
    public var device: UInt64
    /// `st_ino`.
    public var inode: UInt64
    /// Size in bytes.
    public var size: Int64
    /// Modification time, nanoseconds since the epoch.
    public var modifiedNanoseconds: Int64

    /// Creates an identity from known values (tests, decoded records).
    public init(path: String, device: UInt64, inode: UInt64, size: Int64, modifiedNanoseconds: Int64) {
        self.path = path
        self.device = device
        self.inode = inode
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
    }

    /// Examines the file at `path` (relative to the current directory when not absolute).
    /// Throws `TransferError` (`file-unreadable`) when it is missing or not a regular file.
    public init(examining path: String) throws(TransferError) {
        let found = try TransferError.translating { () throws(SystemError) in try ReadOnlyFile(path: path).stamp() }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        self.init(path: absolute, device: found.device, inode: found.inode, size: found.size,
                  modifiedNanoseconds: found.modifiedNanoseconds)
    }

    /// True when `other` is the same file (device and inode) at the same size and modification
    /// time: bytes a server took from one are the other's bytes.
    public func isSameVersion(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode && size == other.size && modifiedNanoseconds == other.modifiedNanoseconds
    }

    /// True when `other` is the same file, whatever its version.
    public func isSameFile(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }
}
