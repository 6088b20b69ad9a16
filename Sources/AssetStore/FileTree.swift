#if canImport(Glibc)
import Glibc
#endif

/// A photo file found by a walk of the library folder.
public struct FileEntry: Sendable, Equatable {
    /// Relative to the root, `/`-separated.
    public let path: String
    public let size: Int
    public let mtimeNanoseconds: Int64
}

/// Something a walk could not read; reported, never fatal.
public struct ScanProblem: Sendable, Equatable {
    public let path: String
    public let message: String
}

/// Walks a library folder with libc (every call wrapped here). Hidden entries (a leading dot) and
/// files that are not JPEG or PNG by extension are skipped; symbolic links are followed only when
/// they resolve inside the root, and each directory is visited once, so a link loop ends.
enum FileTree {
    static let photoExtensions: Set<String> = ["jpg", "jpeg", "jpe", "jfif", "png"]

    /// The canonical absolute path of `path`, or nil.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func isPhotoName(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: ".") else { return false }
        return photoExtensions.contains(name[name.index(after: dot)...].lowercased())
    }

    /// Every photo under `root` (a canonical absolute path), sorted by path.
    static func walk(root: String) throws(StoreError) -> (files: [FileEntry], problems: [ScanProblem]) {
        var info = stat()
        guard stat(root, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError(.unreadableRoot, "\(root): \(String(cString: strerror(errno)))")
        }
        var files: [FileEntry] = []
        var problems: [ScanProblem] = []
        var visited: Set<[UInt64]> = [[UInt64(info.st_dev), UInt64(info.st_ino)]]
        var pending: [String] = [""]   // relative directory paths
        while let relative = pending.popLast() {
            let absolute = relative.isEmpty ? root : root + "/" + relative
            guard let dir = opendir(absolute) else {
                problems.append(ScanProblem(path: relative.isEmpty ? "." : relative, message: String(cString: strerror(errno))))
                continue
            }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
                if bytes.first == UInt8(ascii: ".") { continue }
                guard let name = String(validating: bytes, as: UTF8.self) else {
                    // Paths are Strings from here to the receiver: a name that is not UTF-8 would
                    // come back as another name that does not exist. Report it, never drop it silently.
                    let shown = Self.escaped(bytes)
                    let isFolder = entry.pointee.d_type == UInt8(DT_DIR)
                    if isFolder || isPhotoName(shown) {
                        problems.append(ScanProblem(path: relative.isEmpty ? shown : relative + "/" + shown,
                                                    message: "the \(isFolder ? "folder" : "file") name is not valid UTF-8, so PhotoDrain cannot track it; rename it"))
                    }
                    continue
                }
                let childRelative = relative.isEmpty ? name : relative + "/" + name
                let childAbsolute = absolute + "/" + name
                var link = stat()
                guard lstat(childAbsolute, &link) == 0 else {
                    problems.append(ScanProblem(path: childRelative, message: String(cString: strerror(errno))))
                    continue
                }
                var target = link
                if (link.st_mode & S_IFMT) == S_IFLNK {
                    guard let resolved = realPath(childAbsolute), resolved == root || resolved.hasPrefix(root + "/") else {
                        continue  // dangling, or pointing out of the library: not ours to read
                    }
                    guard stat(childAbsolute, &target) == 0 else { continue }
                }
                switch target.st_mode & S_IFMT {
                case S_IFDIR:
                    if visited.insert([UInt64(target.st_dev), UInt64(target.st_ino)]).inserted {
                        pending.append(childRelative)
                    }
                case S_IFREG where isPhotoName(name):
                    let mtime = Int64(target.st_mtim.tv_sec) * 1_000_000_000 + Int64(target.st_mtim.tv_nsec)
                    files.append(FileEntry(path: childRelative, size: Int(target.st_size), mtimeNanoseconds: mtime))
                default:
                    continue
                }
            }
        }
        files.sort { $0.path < $1.path }
        return (files, problems)
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
