#if canImport(Glibc)
import Glibc
#endif

/// Every libc call the Receiver makes, each wrapped once: EINTR is retried, failures become
/// `ReceiverError` carrying the call's name and `errno`.
enum Syscalls {
    /// Retries `body` while it fails with EINTR; returns its non-negative result or throws.
    @inline(__always)
    private static func retrying<T: BinaryInteger>(_ name: String, context: String = "",
                                                   _ body: () -> T) throws(ReceiverError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let err = errno
            if err == EINTR { continue }
            throw ReceiverError.system(name, err, context: context)
        }
    }

    // MARK: Sockets

    /// A listening TCP socket bound to `host:port` (IPv4 or IPv6 literal, or "localhost").
    static func listenTCP(host: String, port: Int, backlog: Int32) throws(ReceiverError) -> Int32 {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let literal = host == "localhost" ? "127.0.0.1" : host
        let isV6: Bool
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            isV6 = false
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            isV6 = true
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
        } else {
            throw ReceiverError(code: .invalidConfiguration,
                                message: "host \(host) is not an IPv4 or IPv6 address")
        }
        let fd: Int32
        do {
            fd = try retrying("socket") {
                socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            }
        } catch { throw ReceiverError(code: .bindFailed, message: error.message, systemErrno: error.systemErrno) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32
        if isV6 {
            bound = withUnsafePointer(to: &v6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            bound = withUnsafePointer(to: &v4) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if bound != 0 || listen(fd, backlog) != 0 {
            let err = errno
            close(fd)
            throw ReceiverError(code: .bindFailed,
                                message: "cannot listen on \(host):\(port): \(errorText(err))",
                                systemErrno: err)
        }
        return fd
    }

    /// The local port a socket is bound to.
    static func boundPort(_ fd: Int32) throws(ReceiverError) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        if result != 0 { throw ReceiverError.system("getsockname", errno) }
        if Int32(storage.ss_family) == AF_INET6 {
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// Accepts one connection (close-on-exec) with TCP_NODELAY and a send timeout set.
    static func accept(_ listener: Int32, sendTimeoutSeconds: Double) throws(ReceiverError) -> Int32 {
        let fd = try retrying("accept") { Glibc.accept(listener, nil, nil) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: Int(sendTimeoutSeconds),
                              tv_usec: Int((sendTimeoutSeconds - sendTimeoutSeconds.rounded(.down)) * 1_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Waits until `fd` is readable (or hung up); false on timeout. A negative timeout waits forever.
    static func waitReadable(_ fd: Int32, timeoutMilliseconds: Int32) throws(ReceiverError) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = try retrying("poll") { poll(&entry, 1, timeoutMilliseconds) }
        return ready > 0
    }

    /// Waits until one of `fds` is readable; returns the indices that are. Empty on timeout.
    static func waitReadable(_ fds: [Int32], timeoutMilliseconds: Int32) throws(ReceiverError) -> [Int] {
        var entries = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let count = entries.count
        _ = try retrying("poll") { poll(&entries, nfds_t(count), timeoutMilliseconds) }
        return entries.indices.filter { entries[$0].revents != 0 }
    }

    /// Receives up to `count` bytes; 0 means the peer closed.
    /// Receives into `buffer` (up to its size); 0 at end of stream or for an empty buffer.
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(ReceiverError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        return try retrying("recv") { recv(fd, base, buffer.count, 0) }
    }

    /// Sends every byte, without SIGPIPE; throws on error or on the send timeout (EAGAIN).
    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(ReceiverError) {
        guard let base = bytes.baseAddress else { return }
        var sent = 0
        while sent < bytes.count {
            let n = try retrying("send") { send(fd, base + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            sent += n
        }
    }

    /// Shuts both directions of a socket down, waking any thread blocked on it. Errors are ignored:
    /// the socket may already be gone.
    static func shutdownBoth(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Shuts the sending direction of a socket down (the peer reads end-of-stream).
    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes a descriptor. EINTR is not retried (Linux has already released the descriptor).
    static func closeDescriptor(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// A close-on-exec pipe: (read end, write end).
    static func makePipe() throws(ReceiverError) -> (Int32, Int32) {
        var ends: [Int32] = [0, 0]
        _ = try retrying("pipe") { pipe(&ends) }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// Writes one byte to a pipe to wake a poller; errors are ignored (a full pipe is awake already).
    /// Makes a write to a closed pipe or socket an EPIPE error instead of a process-killing
    /// SIGPIPE, for the whole process: a server must outlive any one peer.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    static func poke(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }

    // MARK: Files

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

    /// Reads up to `count` bytes at `offset`; 0 at end of file.
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
