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

    init(path: String, size: Int, mtimeNanoseconds: Int64, rawPath: [UInt8]? = nil) {
        self.path = path
        self.size = size
        self.mtimeNanoseconds = mtimeNanoseconds
        self.rawPath = rawPath
    }
}

/// A library entry a walk did not make a row for, and why: it could not be read, its name is not
/// valid UTF-8 (shown with `\xHH` escapes), or it is not a regular file inside the library (a link
/// leading out, a dangling link, a FIFO, a socket, a device). Reported by each scan and kept by the store for `status`; never fatal.
public struct ScanProblem: Sendable, Equatable, Codable {
    /// Relative to the root, `/`-separated; `.` for the root itself.
    public let path: String
    /// Why it was skipped, in words.
    public let message: String

    /// A skipped entry and the reason.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
}

/// Walks a library folder with libc (every call wrapped here). Every regular file becomes an entry,
/// whatever its name, so nothing in the library vanishes silently; what is left out is left out by
/// one rule: an entry whose name starts with a dot (hidden files and folders, such as `.cache/` or
/// a `.DS_Store`), and the store's own files (`excluding`, absolute paths) when the store lives
/// inside the library, are not the library's content and are neither entries nor problems. Any
/// other entry that is not made an entry is a `ScanProblem` with its reason. Symbolic links are
/// followed only when they resolve inside the root, and each directory is visited once, so a link
/// loop ends.
enum FileTree {
    /// The canonical absolute path of `path`, or nil.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Calls `body` with `path` (bytes, which need not be UTF-8) as a NUL-terminated C string.
    static func withCPath<R>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        (path + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// The canonical absolute path of `path`, as bytes, or nil.
    static func realPath(bytes path: [UInt8]) -> [UInt8]? {
        guard let resolved = withCPath(path, { realpath($0, nil) }) else { return nil }
        defer { free(resolved) }
        return Array(UnsafeBufferPointer(start: UnsafeRawPointer(resolved).assumingMemoryBound(to: UInt8.self), count: strlen(resolved)))
    }

    /// Every regular file under `root` (a canonical absolute path) but hidden ones and `excluding`
    /// (absolute paths), sorted by path, and every entry skipped for another reason.
    ///
    /// Paths are walked as bytes: a name that is not valid UTF-8 is a file like any other, its
    /// `FileEntry.path` showing the bytes escaped and `rawPath` holding them. Only if that escaped
    /// form is also the real name of another file (a name with a literal `\x`) is the entry left
    /// out, as a problem naming the clash.
    static func walk(root: String, excluding: Set<String> = []) throws(StoreError) -> (files: [FileEntry], problems: [ScanProblem]) {
        var info = stat()
        guard stat(root, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(.unreadableRoot, "\(root): \(String(cString: strerror(errno)))")
        }
        let rootBytes = Array(root.utf8)
        var files: [FileEntry] = []
        var problems: [ScanProblem] = []
        var visited: Set<[UInt64]> = [[UInt64(info.st_dev), UInt64(info.st_ino)]]
        // Relative directory paths: as shown, as bytes, and whether the two are the same.
        var pending: [(shown: String, bytes: [UInt8], exact: Bool)] = [("", [], true)]
        while let (relative, relativeBytes, relativeExact) = pending.popLast() {
            let absolute = relativeBytes.isEmpty ? rootBytes : rootBytes + [0x2F] + relativeBytes
            guard let dir = withCPath(absolute, { opendir($0) }) else {
                problems.append(ScanProblem(path: relative.isEmpty ? "." : relative, message: String(cString: strerror(errno))))
                continue
            }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
                if bytes.first == UInt8(ascii: ".") { continue }
                let valid = String(validating: bytes, as: UTF8.self)
                let name = valid ?? Self.escaped(bytes)
                let exact = relativeExact && valid != nil
                let childRelative = relative.isEmpty ? name : relative + "/" + name
                let childBytes = relativeBytes.isEmpty ? bytes : relativeBytes + [0x2F] + bytes
                let childAbsolute = rootBytes + [0x2F] + childBytes
                if exact && excluding.contains(root + "/" + childRelative) { continue }
                var link = stat()
                guard withCPath(childAbsolute, { lstat($0, &link) }) == 0 else {
                    problems.append(ScanProblem(path: childRelative, message: String(cString: strerror(errno))))
                    continue
                }
                var target = link
                if (link.st_mode & S_IFMT) == S_IFLNK {
                    guard let resolved = realPath(bytes: childAbsolute) else {
                        problems.append(ScanProblem(path: childRelative, message: "a dangling symbolic link"))
                        continue
                    }
                    guard resolved == rootBytes || resolved.starts(with: rootBytes + [0x2F]) else {
                        problems.append(ScanProblem(path: childRelative,
                                                    message: "a symbolic link to \(Self.shown(resolved)), outside the library"))
                        continue
                    }
                    if let text = String(validating: resolved, as: UTF8.self), excluding.contains(text) { continue }
                    guard withCPath(childAbsolute, { stat($0, &target) }) == 0 else {
                        problems.append(ScanProblem(path: childRelative, message: String(cString: strerror(errno))))
                        continue
                    }
                }
                switch target.st_mode & S_IFMT {
                case S_IFDIR:
                    if visited.insert([UInt64(target.st_dev), UInt64(target.st_ino)]).inserted {
                        pending.append((childRelative, childBytes, exact))
                    }
                case S_IFREG:
                    let mtime = Int64(target.st_mtim.tv_sec) * 1_000_000_000 + Int64(target.st_mtim.tv_nsec)
                    files.append(FileEntry(path: childRelative, size: Int(target.st_size), mtimeNanoseconds: mtime,
                                           rawPath: exact ? nil : childBytes))
                case let kind:
                    problems.append(ScanProblem(path: childRelative, message: "\(describe(fileType: kind)), not a regular file"))
                }
            }
        }
        // An escaped name that is also a real one: the real name keeps the row.
        let realNames = Set(files.lazy.filter { $0.rawPath == nil }.map(\.path))
        files.removeAll { file in
            guard file.rawPath != nil, realNames.contains(file.path) else { return false }
            problems.append(ScanProblem(path: file.path, message: "the name is not valid UTF-8, and shown with \\x escapes it is the name of another file; rename one of them"))
            return true
        }
        files.sort { $0.path < $1.path }
        problems.sort { $0.path < $1.path }
        return (files, problems)
    }

    /// Bytes of a path for messages: as text when UTF-8, else escaped.
    static func shown(_ bytes: [UInt8]) -> String {
        String(validating: bytes, as: UTF8.self) ?? escaped(bytes)
    }

    /// The size and modification time of the regular file at `path` (bytes), or nil.
    static func fileState(bytes path: [UInt8]) -> (size: Int, mtimeNanoseconds: Int64)? {
        var info = stat()
        guard withCPath(path, { stat($0, &info) }) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return (Int(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    /// Makes `alias` a symbolic link to `target` (bytes), replacing what is there; false on failure.
    static func makeAlias(_ alias: String, to target: [UInt8]) -> Bool {
        var current = [UInt8](repeating: 0, count: 4097)
        let n = current.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { readlink(alias, $0.baseAddress!, 4096) }
        }
        if n >= 0 && Array(current[0..<n]) == target { return true }
        let staging = alias + ".\(getpid()).tmp"
        unlink(staging)
        guard withCPath(target, { symlink($0, staging) }) == 0 else { return false }
        guard rename(staging, alias) == 0 else {
            unlink(staging)
            return false
        }
        return true
    }

    /// A phrase naming a `st_mode` file type that is neither a file nor a directory.
    static func describe(fileType: mode_t) -> String {
        switch fileType {
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "an entry of unknown type"
        }
    }

    /// fnmatch(3) with no flags: true when `path` matches the glob `pattern`.
    static func matches(pattern: String, path: String) -> Bool {
        fnmatch(pattern, path, 0) == 0
    }

    /// Opens (creating, mode 0600) `path` and takes a shared flock(2) on it, waiting for it; the
    /// descriptor, or nil with the reason.
    static func lockShared(_ path: String) -> Result<Int32, StoreError> {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return .failure(StoreError(.cannotOpen, "\(path): \(String(cString: strerror(errno)))")) }
        while flock(fd, LOCK_SH) != 0 {
            guard errno == EINTR else {
                let message = String(cString: strerror(errno))
                close(fd)
                return .failure(StoreError(.cannotOpen, "\(path): \(message)"))
            }
        }
        return .success(fd)
    }

    /// True when some open file description holds a flock(2) on `path` (a missing file holds none).
    /// Probes by taking an exclusive lock without waiting and giving it straight back.
    static func isLockHeld(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }

    /// Closes a descriptor `lockShared` returned, which releases its lock.
    static func closeDescriptor(_ fd: Int32) {
        close(fd)
    }

    /// A name for people: printable ASCII as it is, every other byte as `\\xHH`.
    static func escaped(_ bytes: [UInt8]) -> String {
        var out = ""
        for byte in bytes {
            if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    /// The current time in seconds since the epoch.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// This process's id.
    static var processID: Int32 { getpid() }

    /// True when a process with this id exists (EPERM means it exists but is not ours).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// True when something exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Creates `path` and its missing parents with mode 0700.
    static func makeDirectories(_ path: String) throws(StoreError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw StoreError(.cannotOpen, "\(current): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// An environment variable, or nil.
    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}

extension FileTree {
    /// The size and modification time of a regular file, or nil when it is gone or not a file.
    static func fileState(_ path: String) -> (size: Int, mtimeNanoseconds: Int64)? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return (Int(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }
}
