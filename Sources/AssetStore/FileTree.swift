#if canImport(Glibc)
import Glibc
#endif

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
    static func walk(root: String, excluding: Set<String> = [], includeHidden: Bool = false) throws(StoreError) -> (files: [FileEntry], problems: [ScanProblem]) {
        let walk = try walk(root: root, excluding: excluding, includeHidden: includeHidden) { _ in nil }
        return (walk.files, walk.problems)
    }

    /// The same walk, asking `known` about each directory before reading it: when `known` answers
    /// with what an earlier walk found directly in that directory (it decides from the directory's
    /// identity and times, which the walk passes), the walk takes that instead of
    /// reading the directory, and goes on into its subdirectories, which are checked one by one
    /// with the same link rules. If one of them is no longer a directory inside the library, the
    /// answer is stale and the directory is read after all. Every directory the walk went
    /// through is in the result, with whether it was read.
    static func walk(root: String, excluding: Set<String>, includeHidden: Bool = false,
                     known: (WalkedDirectory) -> KnownDirectory?) throws(StoreError) -> Walk {
        var info = stat()
        guard stat(root, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(.unreadableRoot, "\(root): \(String(cString: strerror(errno)))")
        }
        let rootBytes = Array(root.utf8)
        var walk = Walk()
        var visited: Set<[UInt64]> = [[UInt64(info.st_dev), UInt64(info.st_ino)]]
        // Relative directory paths: as shown, as bytes, whether the two are the same, and what
        // stat(2) said of the directory when the walk met it.
        var pending: [(shown: String, bytes: [UInt8], exact: Bool, info: stat)] = [("", [], true, info)]
        /// A directory entry's path as shown and as bytes, and whether the two are the same.
        func child(_ name: [UInt8], of parent: (shown: String, bytes: [UInt8], exact: Bool)) -> (shown: String, bytes: [UInt8], exact: Bool) {
            let valid = String(validating: name, as: UTF8.self)
            let shownName = valid ?? Self.escaped(name)
            return (parent.shown.isEmpty ? shownName : parent.shown + "/" + shownName,
                    parent.bytes.isEmpty ? name : parent.bytes + [0x2F] + name,
                    parent.exact && valid != nil)
        }
        while let (relative, relativeBytes, relativeExact, directoryInfo) = pending.popLast() {
            var directory = WalkedDirectory(path: relative, info: directoryInfo)
            if let answer = known(directory) {
                // Taken from the earlier walk when every subdirectory it knew still is one.
                var subdirectories: [(shown: String, bytes: [UInt8], exact: Bool, info: stat)] = []
                for name in answer.subdirectories {
                    let entry = child(name, of: (relative, relativeBytes, relativeExact))
                    guard case .directory(let childInfo) = classify(entry, root: root, rootBytes: rootBytes, excluding: excluding) else { break }
                    subdirectories.append((entry.shown, entry.bytes, entry.exact, childInfo))
                }
                if subdirectories.count == answer.subdirectories.count {
                    walk.problems += answer.problems
                    for subdirectory in subdirectories where visited.insert([UInt64(subdirectory.info.st_dev), UInt64(subdirectory.info.st_ino)]).inserted {
                        pending.append(subdirectory)
                    }
                    directory.subdirectories = answer.subdirectories
                    directory.hidden = answer.hidden
                    walk.directories.append(directory)
                    continue
                }
            }
            let absolute = relativeBytes.isEmpty ? rootBytes : rootBytes + [0x2F] + relativeBytes
            guard let dir = withCPath(absolute, { opendir($0) }) else {
                walk.problems.append(ScanProblem(path: relative.isEmpty ? "." : relative, message: String(cString: strerror(errno))))
                continue
            }
            defer { closedir(dir) }
            walk.directoriesRead += 1
            directory.read = true
            while let entry = readdir(dir) {
                let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
                if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
                if bytes.first == UInt8(ascii: "."), !includeHidden {
                    directory.hidden += 1
                    continue
                }
                if entry.pointee.d_type == UInt8(DT_LNK) || entry.pointee.d_type == UInt8(DT_UNKNOWN) { directory.holdsLinks = true }
                let path = child(bytes, of: (relative, relativeBytes, relativeExact))
                switch classify(path, root: root, rootBytes: rootBytes, excluding: excluding) {
                case .ownFile:
                    continue
                case .problem(let message):
                    walk.problems.append(ScanProblem(path: path.shown, message: message))
                case .directory(let target):
                    directory.subdirectories.append(bytes)
                    if visited.insert([UInt64(target.st_dev), UInt64(target.st_ino)]).inserted {
                        pending.append((path.shown, path.bytes, path.exact, target))
                    }
                case .file(let target):
                    let ctime = Int64(target.st_ctim.tv_sec) * 1_000_000_000 + Int64(target.st_ctim.tv_nsec)
                    walk.files.append(FileEntry(path: path.shown, size: Int(target.st_size), mtimeNanoseconds: Self.mtime(target),
                                                rawPath: path.exact ? nil : path.bytes,
                                                changedNanoseconds: max(Self.mtime(target), ctime), stamp: FileStamp(target)))
                }
            }
            walk.directories.append(directory)
        }
        // An escaped name that is also a real one: the real name keeps the row.
        let realNames = Set(walk.files.lazy.filter { $0.rawPath == nil }.map(\.path))
        walk.files.removeAll { file in
            guard file.rawPath != nil, realNames.contains(file.path) else { return false }
            walk.problems.append(ScanProblem(path: file.path, message: "the name is not valid UTF-8, and shown with \\x escapes it is the name of another file; rename one of them"))
            return true
        }
        walk.files.sort { $0.path < $1.path }
        // A problem an earlier walk's answer carried may also have been found again.
        var seen: Set<String> = []
        walk.problems = walk.problems.sorted { $0.path < $1.path }.filter { seen.insert($0.path).inserted }
        return walk
    }

    /// What one directory entry is to a walk.
    private enum EntryKind {
        /// The store's own file (or a link to it): not the library's content, nor a problem.
        case ownFile
        /// Left out, with why.
        case problem(String)
        /// A directory inside the library (a link to one is followed), with stat(2)'s answer for it.
        case directory(stat)
        /// A regular file inside the library, with stat(2)'s answer for it.
        case file(stat)
    }

    /// Sorts the entry at `path` (relative, as shown and as bytes) by the walk's rules: the store's
    /// own files are skipped; a symbolic link is followed only when it resolves inside the root;
    /// what is neither a directory nor a regular file is a problem, as is what cannot be stat'ed.
    private static func classify(_ path: (shown: String, bytes: [UInt8], exact: Bool), root: String, rootBytes: [UInt8],
                                 excluding: Set<String>) -> EntryKind {
        let absolute = rootBytes + [0x2F] + path.bytes
        if path.exact && excluding.contains(root + "/" + path.shown) { return .ownFile }
        var link = stat()
        guard withCPath(absolute, { lstat($0, &link) }) == 0 else { return .problem(String(cString: strerror(errno))) }
        var target = link
        if (link.st_mode & S_IFMT) == S_IFLNK {
            guard let resolved = realPath(bytes: absolute) else { return .problem("a dangling symbolic link") }
            guard resolved == rootBytes || resolved.starts(with: rootBytes + [0x2F]) else {
                return .problem("a symbolic link to \(Self.shown(resolved)), outside the library")
            }
            if let text = String(validating: resolved, as: UTF8.self), excluding.contains(text) { return .ownFile }
            guard withCPath(absolute, { stat($0, &target) }) == 0 else { return .problem(String(cString: strerror(errno))) }
        }
        switch target.st_mode & S_IFMT {
        case S_IFDIR: return .directory(target)
        case S_IFREG: return .file(target)
        case let kind: return .problem("\(describe(fileType: kind)), not a regular file")
        }
    }

    /// A stat(2) answer's modification time in nanoseconds since the epoch.
    static func mtime(_ info: stat) -> Int64 {
        Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    /// Bytes of a path for messages: as text when UTF-8, else escaped.
    static func shown(_ bytes: [UInt8]) -> String {
        String(validating: bytes, as: UTF8.self) ?? escaped(bytes)
    }

    /// The size, modification time and stamp of the regular file at `path` (bytes), or nil.
    static func fileState(bytes path: [UInt8]) -> (size: Int, mtimeNanoseconds: Int64, stamp: FileStamp)? {
        var info = stat()
        guard withCPath(path, { stat($0, &info) }) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return (Int(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec), FileStamp(info))
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
