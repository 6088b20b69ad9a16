#if canImport(Glibc)
import Glibc
#endif

/// An inotify(7) instance: every libc call `LibraryWatcher` makes goes through this file, each
/// wrapped once with EINTR retried. The descriptor is non-blocking and close-on-exec, owned here
/// and closed when the instance goes.
final class Inotify: Sendable {
    /// One event as the kernel reported it.
    struct Event: Sendable, Equatable {
        /// The watch it came from; -1 for `queueOverflow`.
        var watch: Int32
        var mask: UInt32
        /// Pairs a `movedFrom` with its `movedTo`.
        var cookie: UInt32
        /// The entry's name (bytes) in the watched folder; empty for an event on the folder itself.
        var name: [UInt8]

        func has(_ bits: UInt32) -> Bool { mask & bits != 0 }
    }

    // The event bits (IN_*), typed once.
    static let created = UInt32(IN_CREATE)
    static let closedAfterWriting = UInt32(IN_CLOSE_WRITE)
    static let movedTo = UInt32(IN_MOVED_TO)
    static let movedFrom = UInt32(IN_MOVED_FROM)
    static let deleted = UInt32(IN_DELETE)
    static let attributesChanged = UInt32(IN_ATTRIB)
    static let deletedSelf = UInt32(IN_DELETE_SELF)
    static let movedSelf = UInt32(IN_MOVE_SELF)
    static let unmounted = UInt32(IN_UNMOUNT)
    static let ignored = UInt32(IN_IGNORED)
    static let queueOverflow = UInt32(IN_Q_OVERFLOW)
    static let isDirectory = UInt32(IN_ISDIR)
    static let onlyDirectory = UInt32(IN_ONLYDIR)
    static let dontFollow = UInt32(IN_DONT_FOLLOW)

    let descriptor: Int32

    /// A new instance (inotify_init1). Throws `unavailable` with errno: EMFILE when the user has
    /// `fs.inotify.max_user_instances` already, ENOSYS without inotify.
    init() throws(WatchError) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            let err = errno
            throw WatchError(.unavailable, "inotify_init1: \(Self.describe(err))", errno: err)
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Watches the folder at `path` (bytes, absolute) for `mask` (inotify_add_watch); the watch
    /// descriptor, or errno (ENOSPC: the watch limit; ENOENT, ENOTDIR, EACCES: gone or unreadable).
    /// Watching a folder already watched returns its descriptor.
    func addWatch(_ path: [UInt8], mask: UInt32) -> Result<Int32, WatchError> {
        while true {
            let wd = (path + [0]).withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { inotify_add_watch(descriptor, $0.baseAddress!, mask) }
            }
            if wd >= 0 { return .success(wd) }
            let err = errno
            if err == EINTR { continue }
            return .failure(WatchError(err == ENOSPC ? .watchLimit : .unwatchable,
                                       "inotify_add_watch \(String(decoding: path, as: UTF8.self)): \(Self.describe(err))", errno: err))
        }
    }

    /// Stops a watch (inotify_rm_watch); the kernel then queues `ignored` for it. A watch the
    /// kernel already dropped (its folder deleted) is no error.
    func removeWatch(_ watch: Int32) {
        _ = inotify_rm_watch(descriptor, watch)
    }

    /// Every event queued now, without waiting (read until EAGAIN). A read error other than
    /// EAGAIN is reported as a `queueOverflow`: events may have been lost, as there.
    func readEvents() -> [Event] {
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                let err = errno
                if err == EINTR { continue }
                if err != EAGAIN && err != EWOULDBLOCK { events.append(Event(watch: -1, mask: Self.queueOverflow, cookie: 0, name: [])) }
                return events
            }
            if count == 0 { return events }
            events += Self.parse(buffer[0..<count])
        }
    }

    /// Waits until events are queued or `milliseconds` pass (poll); true when some are.
    func waitForEvents(milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, milliseconds)
            if ready >= 0 { return ready > 0 }
            if errno != EINTR { return false }
        }
    }

    /// The events in what one read returned: `struct inotify_event` (wd, mask, cookie, len, then
    /// `len` bytes of NUL-padded name), back to back.
    static func parse(_ bytes: ArraySlice<UInt8>) -> [Event] {
        var events: [Event] = []
        let header = 16
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset + header <= raw.count {
                let watch = raw.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let cookie = raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
                let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                let end = min(raw.count, offset + header + length)
                let name = Array(raw[(offset + header)..<end].prefix { $0 != 0 })
                events.append(Event(watch: watch, mask: mask, cookie: cookie, name: name))
                offset = offset + header + length
            }
        }
        return events
    }

    static func describe(_ err: Int32) -> String { String(cString: strerror(err)) }
}

/// The other libc calls the watcher makes: listing a folder's subfolders and asking what is at
/// a path.
enum WatchSyscalls {
    /// The names (bytes) of the folders directly in `path` (absolute, bytes), symbolic links
    /// not followed; empty when it cannot be read.
    static func subfolders(of path: [UInt8]) -> [[UInt8]] {
        guard let dir = (path + [0]).withUnsafeBufferPointer({ $0.withMemoryRebound(to: CChar.self) { opendir($0.baseAddress!) } }) else { return [] }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            switch entry.pointee.d_type {
            case UInt8(DT_DIR): names.append(name)
            case UInt8(DT_UNKNOWN):
                // Some file systems do not say: ask lstat.
                if identity(of: path + [0x2F] + name, followingLinks: false)?.isDirectory == true { names.append(name) }
            default: continue
            }
        }
        return names
    }

    /// The device and whether it is a folder, of what is at `path` (bytes), or nil when nothing is.
    static func identity(of path: [UInt8], followingLinks: Bool = true) -> (device: UInt64, isDirectory: Bool)? {
        var info = stat()
        let result = (path + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { followingLinks ? stat($0.baseAddress!, &info) : lstat($0.baseAddress!, &info) }
        }
        guard result == 0 else { return nil }
        return (UInt64(info.st_dev), (info.st_mode & S_IFMT) == S_IFDIR)
    }
}
