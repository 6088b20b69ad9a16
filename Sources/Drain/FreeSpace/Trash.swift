#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A trash on the library's own filesystem, in the freedesktop.org layout (`files/` holds the
/// file, `info/<name>.trashinfo` its original path and deletion date), so a desktop's file
/// manager shows and restores what `free-space` moved (issue 33). A file only ever moves into a
/// trash by rename(2): never copied, never across filesystems (EXDEV sends it to the next trash).
///
/// Which trash, in order, for a library whose top is `root`:
/// 1. the home trash, `$XDG_DATA_HOME/Trash` (default `~/.local/share/Trash`), when it is on the
///    library's filesystem;
/// 2. `$topdir/.Trash-$UID` at the top of the library's mount, when it exists as a folder of ours
///    (not a link) or can be made there;
/// 3. `.photodrain-trash` at the library's top (never scanned: `AssetStore.trashFolders`).
/// A file on another filesystem than all three (a mount inside the library) stays.
///
/// Each module keeps its C calls in one place: the trash's (rename, unlink, stat, open with
/// `O_EXCL`, fsync) are here.
public struct Trash: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case home
        case topdir
        case library
    }

    public let kind: Kind
    /// The folder holding `files/` and `info/`.
    public let directory: String
    /// For a `.Trash-$UID`: the mount's top, which the `.trashinfo` paths are relative to.
    public let topdir: String?

    public init(kind: Kind, directory: String, topdir: String?) {
        self.kind = kind
        self.directory = directory
        self.topdir = topdir
    }

    /// The trashes to try, in order, for the library at `root` (a canonical path).
    public static func candidates(root: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> [Trash] {
        var found: [Trash] = []
        guard let device = device(of: root) else { return [] }
        var dataHome = environment["XDG_DATA_HOME"] ?? ""
        if !dataHome.hasPrefix("/"), let home = environment["HOME"], home.hasPrefix("/") { dataHome = home + "/.local/share" }
        if dataHome.hasPrefix("/"), let existing = nearestExisting(dataHome + "/Trash"), self.device(of: existing) == device {
            found.append(Trash(kind: .home, directory: dataHome + "/Trash", topdir: nil))
        }
        let top = mountTop(of: root, device: device)
        let topTrash = (top == "/" ? "" : top) + "/.Trash-\(getuid())"
        var info = stat()
        if lstat(topTrash, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR && info.st_uid == getuid() {
                found.append(Trash(kind: .topdir, directory: topTrash, topdir: top))
            }
        } else if access(top, W_OK) == 0 {
            found.append(Trash(kind: .topdir, directory: topTrash, topdir: top))
        }
        found.append(Trash(kind: .library, directory: root + "/.photodrain-trash", topdir: nil))
        return found
    }

    /// Where one file goes: its place in `files/` and its `.trashinfo`.
    public struct Slot: Sendable, Equatable {
        public var file: String
        public var info: String
    }

    /// Claims a name in this trash for the file at `original` (absolute): makes the trash's
    /// folders (0700), then creates `info/<name>.trashinfo` with `O_EXCL` (the freedesktop.org
    /// way of taking a name) holding the original path and `date`, synced. `name`, `name.2`, ... is
    /// taken until one is free in both `files/` and `info/`. Nil when the trash cannot be made or
    /// written.
    public func claim(for original: String, date: Date) -> Slot? {
        // The home trash is made with its parents (`$XDG_DATA_HOME` may not exist yet); a
        // `.Trash-$UID` or `.photodrain-trash` only in a top that exists.
        if kind == .home, !Self.exists(directory) {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        for folder in [directory, directory + "/files", directory + "/info"] {
            if mkdir(folder, 0o700) != 0 && errno != EEXIST { return nil }
        }
        let base = (original as NSString).lastPathComponent
        let shown: String
        if let topdir, original.hasPrefix(topdir == "/" ? "/" : topdir + "/") {
            shown = String(original.dropFirst(topdir == "/" ? 1 : topdir.count + 1))
        } else {
            shown = original
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        let encoded = shown.addingPercentEncoding(withAllowedCharacters: Self.pathCharacters) ?? shown
        let body = "[Trash Info]\nPath=\(encoded)\nDeletionDate=\(formatter.string(from: date))\n"
        for attempt in 1...10_000 {
            let name = attempt == 1 ? base : "\(base).\(attempt)"
            let file = directory + "/files/" + name
            let info = directory + "/info/" + name + ".trashinfo"
            if Self.exists(file) { continue }
            let fd = open(info, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd < 0 {
                if errno == EEXIST { continue }
                return nil
            }
            let bytes = Array(body.utf8)
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd) == 0
            close(fd)
            guard written == bytes.count, synced else {
                unlink(info)
                return nil
            }
            return Slot(file: file, info: info)
        }
        return nil
    }

    /// Characters a `.trashinfo` path keeps unescaped (the rest are percent-encoded, as the
    /// specification asks).
    static let pathCharacters: CharacterSet = {
        var set = CharacterSet.urlPathAllowed
        set.remove(charactersIn: "%;")
        return set
    }()

    /// How a rename ended.
    public enum Move: Sendable, Equatable {
        case moved
        /// The two paths are on different filesystems (EXDEV): nothing moved.
        case otherFilesystem
        /// Another failure, with its message: nothing moved.
        case failed(String)
    }

    /// rename(2) `from` to `to`, refusing to replace anything at `to`. Never copies.
    public static func move(_ from: String, to: String) -> Move {
        if exists(to) { return .failed("\(to) exists") }
        if rename(from, to) == 0 {
            syncFolder(of: to)
            syncFolder(of: from)
            return .moved
        }
        let code = errno
        if code == EXDEV { return .otherFilesystem }
        return .failed(String(cString: strerror(code)))
    }

    /// Puts the file `from` at `to` without ever replacing anything there: link(2), then unlink(2)
    /// of `from` (so a second file at `to` is refused by the kernel, not by a check that races),
    /// then both folders synced. `restore` places a downloaded photo so.
    /// On a filesystem without hard links (FAT, exFAT: cards and camera drives) it falls back to
    /// `move`, which refuses a file already at `to` by looking first.
    public static func place(_ from: String, at to: String) -> Move {
        if link(from, to) != 0 {
            let code = errno
            if code == EXDEV { return .otherFilesystem }
            if code == EPERM || code == ENOTSUP || code == EOPNOTSUPP || code == EMLINK { return move(from, to: to) }
            return .failed(code == EEXIST ? "\(to) exists" : String(cString: strerror(code)))
        }
        unlink(from)
        syncFolder(of: to)
        return .moved
    }

    /// Sets the modification time of `path` to `nanoseconds` since the epoch (the access time
    /// too); false on failure.
    public static func setModificationTime(_ path: String, nanoseconds: Int64) -> Bool {
        let time = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        let times = [time, time]
        return utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW) == 0
    }

    /// unlink(2); true when the file is gone (or was).
    @discardableResult
    public static func remove(_ path: String) -> Bool {
        unlink(path) == 0 || errno == ENOENT
    }

    /// True when something (a file, a folder, a link) is at `path`.
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// fsync of the folder holding `path`, so a rename survives a power cut.
    static func syncFolder(of path: String) {
        let folder = (path as NSString).deletingLastPathComponent
        let fd = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// The device a path is on; nil when it cannot be stat'ed.
    static func device(of path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt64(info.st_dev)
    }

    /// `path`, or its nearest ancestor that exists.
    static func nearestExisting(_ path: String) -> String? {
        var current = path
        while !current.isEmpty {
            if exists(current) { return current }
            let parent = (current as NSString).deletingLastPathComponent
            if parent == current { break }
            current = parent
        }
        return exists("/") ? "/" : nil
    }

    /// The top of the mount holding `path` (on `device`): the last ancestor on the same device.
    static func mountTop(of path: String, device: UInt64) -> String {
        var current = path
        while current != "/" {
            let parent = (current as NSString).deletingLastPathComponent
            guard !parent.isEmpty, self.device(of: parent) == device else { break }
            current = parent
        }
        return current
    }
}
