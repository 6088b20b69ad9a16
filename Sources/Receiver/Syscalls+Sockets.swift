#if canImport(Glibc)
import Glibc
#endif

/// The sockets, pipes and signal the server's accept loop and connections need, wrapped as
/// every other libc call is (EINTR retried, failures as `ReceiverError`).
extension Syscalls {
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

    /// Accepts one connection (close-on-exec) with TCP_NODELAY and a send timeout set; returns
    /// it with its peer's address (`peerAddress(of:)`).
    static func accept(_ listener: Int32, sendTimeoutSeconds: Double) throws(ReceiverError) -> (fd: Int32, peer: String) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = try retrying("accept") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: Int(sendTimeoutSeconds),
                              tv_usec: Int((sendTimeoutSeconds - sendTimeoutSeconds.rounded(.down)) * 1_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return (fd, peerAddress(of: storage))
    }

    /// The text of a NUL-terminated C buffer.
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A peer's address as the receiver tells peers apart (`FailedAuthLimiter`): an IPv4 address
    /// as text ("192.0.2.7"; an IPv4-mapped IPv6 address too), an IPv6 address by its /64 prefix
    /// ("2001:db8:1:2::/64": one host usually holds a whole /64), "-" for anything else.
    static func peerAddress(of storage: sockaddr_storage) -> String {
        var storage = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            let ok = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var bytes = address.pointee.sin_addr
                    return inet_ntop(AF_INET, &bytes, &text, socklen_t(text.count)) != nil
                }
            }
            return ok ? Self.string(text) : "-"
        case AF_INET6:
            var bytes = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            }
            let raw = withUnsafeBytes(of: &bytes) { Array($0) }
            if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xFF && raw[11] == 0xFF {
                return raw[12..<16].map(String.init).joined(separator: ".")
            }
            withUnsafeMutableBytes(of: &bytes) { for index in 8..<16 { $0[index] = 0 } }
            guard inet_ntop(AF_INET6, &bytes, &text, socklen_t(text.count)) != nil else { return "-" }
            return Self.string(text) + "/64"
        default:
            return "-"
        }
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

    /// A close-on-exec pipe: (read end, write end).
    static func makePipe() throws(ReceiverError) -> (Int32, Int32) {
        var ends: [Int32] = [0, 0]
        _ = try retrying("pipe") { pipe(&ends) }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// Makes a write to a closed pipe or socket an EPIPE error instead of a process-killing
    /// SIGPIPE, for the whole process: a server must outlive any one peer.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes one byte to a pipe to wake a poller; errors are ignored (a full pipe is awake already).
    static func poke(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }
}
