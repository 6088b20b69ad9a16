#if canImport(Glibc)
import Glibc
#endif

/// Every libc call the Receiver makes, each wrapped once: EINTR is retried, failures become
/// `ReceiverError` carrying the call's name and `errno`. Files, paths and the process are here;
/// sockets, pipes and signals in `Syscalls+Sockets.swift`.
enum Syscalls {
    /// Retries `body` while it fails with EINTR; returns its non-negative result or throws.
    @inline(__always)
    static func retrying<T: BinaryInteger>(_ name: String, context: String = "",
                                           _ body: () -> T) throws(ReceiverError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let err = errno
            if err == EINTR { continue }
            throw ReceiverError.system(name, err, context: context)
        }
    }

    // MARK: Files

    /// Closes a descriptor. EINTR is not retried (Linux has already released the descriptor).
    static func closeDescriptor(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Opens a file; `mode` applies when `flags` contains O_CREAT.
    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(ReceiverError) -> Int32 {
        try retrying("open", context: path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    /// Writes every byte at the file's current position.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, context: String) throws(ReceiverError) {
        guard let base = bytes.baseAddress else { return }
        var written = 0
        while written < bytes.count {
            let n = try retrying("write", context: context) { write(fd, base + written, bytes.count - written) }
            written += n
        }
    }

    /// Reads into `buffer` (up to its size) at `offset`; 0 at end of file or for an empty buffer.
    static func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, offset: Int64,
                      context: String) throws(ReceiverError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        return try retrying("pread", context: context) { Glibc.pread(fd, base, buffer.count, off_t(offset)) }
    }

    /// The size of the regular file at `path` (the path's bytes), or nil when there is none.
    static func regularFileSize(bytes path: [UInt8]) -> Int64? {
        let fd = (path + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { Glibc.open($0.baseAddress!, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        }
        guard fd >= 0 else { return nil }
        defer { closeDescriptor(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Flushes a file or directory to stable storage.
    static func fsync(_ fd: Int32, context: String) throws(ReceiverError) {
        _ = try retrying("fsync", context: context) { Glibc.fsync(fd) }
    }

    /// Flushes a directory's entries (after a rename or unlink in it).
    static func fsyncDirectory(_ path: String) throws(ReceiverError) {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { closeDescriptor(fd) }
        try fsync(fd, context: path)
    }

    /// Cuts a file to `length` bytes.
    static func truncate(_ fd: Int32, length: Int64, context: String) throws(ReceiverError) {
        _ = try retrying("ftruncate", context: context) { ftruncate(fd, off_t(length)) }
    }

    /// Moves the file position to `offset`.
    static func seek(_ fd: Int32, to offset: Int64, context: String) throws(ReceiverError) {
        _ = try retrying("lseek", context: context) { lseek(fd, off_t(offset), SEEK_SET) }
    }

    /// The size of an open file.
    static func fileSize(_ fd: Int32, context: String) throws(ReceiverError) -> Int64 {
        var info = stat()
        _ = try retrying("fstat", context: context) { fstat(fd, &info) }
        return Int64(info.st_size)
    }

    /// Waits for an exclusive `flock` on `fd` (released when the descriptor is closed).
    static func lockExclusive(_ fd: Int32, context: String) throws(ReceiverError) {
        _ = try retrying("flock", context: context) { flock(fd, LOCK_EX) }
    }

    /// True when `path` names an existing file or directory.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Atomically renames `from` to `to` (same file system).
    static func rename(_ from: String, _ to: String) throws(ReceiverError) {
        _ = try retrying("rename", context: to) { Glibc.rename(from, to) }
    }

    /// Removes a file; a missing file is not an error.
    static func unlinkIfPresent(_ path: String) throws(ReceiverError) {
        if Glibc.unlink(path) != 0 && errno != ENOENT { throw ReceiverError.system("unlink", errno, context: path) }
    }

    /// Creates a directory (0700) unless it exists.
    static func makeDirectory(_ path: String) throws(ReceiverError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw ReceiverError.system("mkdir", errno, context: path) }
    }

    /// The names in a directory, without "." and "..".
    static func listDirectory(_ path: String) throws(ReceiverError) -> [String] {
        guard let dir = opendir(path) else { throw ReceiverError.system("opendir", errno, context: path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Calls `body` with the bytes of `array`, keeping `body`'s typed error.
    static func withBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(ReceiverError) -> R) throws(ReceiverError) -> R {
        let result: Result<R, ReceiverError> = array.withUnsafeBytes { raw in
            do throws(ReceiverError) { return .success(try body(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Reads a whole (small) file.
    static func readFile(_ path: String, limit: Int64) throws(ReceiverError) -> [UInt8] {
        let fd = try open(path, O_RDONLY)
        defer { closeDescriptor(fd) }
        let size = try fileSize(fd, context: path)
        guard size <= limit else {
            throw ReceiverError(code: .corruptMetadata, message: "\(path) is larger than \(limit) bytes")
        }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var done = 0
        while done < bytes.count {
            let n = try retrying("pread", context: path) {
                bytes.withUnsafeMutableBytes { raw in
                    Glibc.pread(fd, raw.baseAddress.map { $0 + done }, raw.count - done, off_t(done))
                }
            }
            if n == 0 { break }
            done += n
        }
        return Array(bytes[0..<done])
    }

    /// `count` random bytes from the kernel, eight per call to it (not one).
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 7)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }

    /// Reads a small file whose size `stat` does not tell (procfs reports 0): up to `limit`
    /// bytes, until end of file.
    static func readPseudoFile(_ path: String, limit: Int) throws(ReceiverError) -> [UInt8] {
        let fd = try open(path, O_RDONLY)
        defer { closeDescriptor(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: limit, alignment: 8)
        defer { buffer.deallocate() }
        var done = 0
        while done < limit {
            let n = try pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), offset: Int64(done), context: path)
            if n == 0 { break }
            done += n
        }
        return Array(UnsafeRawBufferPointer(rebasing: buffer[0..<done]))
    }

    /// The C library's text for an `errno` value.
    static func errorText(_ err: Int32) -> String {
        String(cString: strerror(err))
    }

    /// Blocks the calling thread (only used to ride out descriptor exhaustion in the accept loop).
    static func sleep(milliseconds: Int) {
        _ = usleep(useconds_t(milliseconds * 1000))
    }

    // MARK: Paths as bytes (`serve --layout path`: a client's file names need not be UTF-8)

    /// Calls `body` with `path` as a NUL-terminated C string.
    private static func withCPath<R>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        (path + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// The text of a byte path for messages (bytes that are not UTF-8 as U+FFFD).
    static func display(_ path: [UInt8]) -> String { String(decoding: path, as: UTF8.self) }

    /// Creates a directory (0700) unless something exists there; throws when that is not a directory.
    static func makeDirectory(bytes path: [UInt8]) throws(ReceiverError) {
        if withCPath(path, { mkdir($0, 0o700) }) == 0 { return }
        let err = errno
        var info = stat()
        guard err == EEXIST, withCPath(path, { stat($0, &info) }) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ReceiverError.system("mkdir", err == EEXIST ? ENOTDIR : err, context: display(path))
        }
    }

    /// True when `path` (bytes) names an existing file or directory.
    static func exists(bytes path: [UInt8]) -> Bool {
        var info = stat()
        return withCPath(path) { stat($0, &info) } == 0
    }

    /// Makes `to` a second name of the file at `from`; false when `to` exists (nothing replaced).
    static func linkUnlessPresent(_ from: String, to: [UInt8]) throws(ReceiverError) -> Bool {
        let result = withCPath(to) { target in Glibc.link(from, target) }
        if result == 0 { return true }
        if errno == EEXIST { return false }
        throw ReceiverError.system("link", errno, context: display(to))
    }

    /// Atomically renames `from` (bytes) to `to`.
    static func rename(bytes from: [UInt8], _ to: String) throws(ReceiverError) {
        _ = try retrying("rename", context: to) { withCPath(from) { Glibc.rename($0, to) } }
    }

    /// Removes a file named by bytes; a missing file is not an error.
    static func unlinkIfPresent(bytes path: [UInt8]) throws(ReceiverError) {
        if withCPath(path, { Glibc.unlink($0) }) != 0 && errno != ENOENT {
            throw ReceiverError.system("unlink", errno, context: display(path))
        }
    }

    /// Flushes a directory named by bytes.
    static func fsyncDirectory(bytes path: [UInt8]) throws(ReceiverError) {
        let fd = try retrying("open", context: display(path)) { withCPath(path) { Glibc.open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) } }
        defer { closeDescriptor(fd) }
        try fsync(fd, context: display(path))
    }

    /// Streams `count` bytes of the file at `path` to a socket, in 1 MiB pieces.
    static func sendFile(_ socket: Int32, path: String, count: Int64) throws(ReceiverError) {
        try sendFile(socket, path: Array(path.utf8), count: count)
    }

    /// Streams `count` bytes of the file at `path` (bytes) to a socket, in 1 MiB pieces.
    static func sendFile(_ socket: Int32, path bytes: [UInt8], count: Int64) throws(ReceiverError) {
        let path = display(bytes)
        let fd = try retrying("open", context: path) { withCPath(bytes) { Glibc.open($0, O_RDONLY | O_CLOEXEC) } }
        defer { closeDescriptor(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < count {
            let want = Int(min(Int64(buffer.count), count - offset))
            let n = try pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), offset: offset, context: path)
            if n == 0 { throw ReceiverError(code: .io, message: "\(path) ended early") }
            try sendAll(socket, UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
    }

    /// Writes one line to standard error, unbuffered.
    static func writeStandardError(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(10)
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var done = 0
            while done < raw.count {
                let n = write(2, base + done, raw.count - done)
                if n < 0 { if errno == EINTR { continue } else { return } }
                done += n
            }
        }
    }
}
