#if canImport(Glibc)
import Glibc
#endif

/// TCP on 127.0.0.1 for the tests' fake servers, relays and raw clients, the fault proxy and the
/// reliability matrix: every socket call they make, each wrapped once (EINTR retried). Loopback
/// only: nothing here listens where another machine could reach it.
public enum LoopbackSocket {
    /// A listening socket on 127.0.0.1 at `port` (0: a free port the system picks); returns the
    /// descriptor and the port it is bound to, nil when it cannot be set up.
    public static func listen(port: UInt16 = 0) -> (descriptor: Int32, port: UInt16)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0, let actual = boundPort(fd) else {
            close(fd)
            return nil
        }
        return (fd, actual)
    }

    /// A loopback port with nothing listening on it (bound, then closed): for a server started
    /// later at a known port, or a connection that must be refused.
    public static func freePort() -> UInt16? {
        guard let (fd, port) = listen() else { return nil }
        close(fd)
        return port
    }

    /// The next connection on a listening socket; nil once the listener was shut down.
    public static func accept(_ fd: Int32) -> Int32? {
        while true {
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 { return client }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// A socket connected to 127.0.0.1:`port`, or nil when nothing listens there. With `source`
    /// (another loopback address, such as "127.0.0.2": Linux answers for all of 127/8) the
    /// connection comes from that address, so a server sees another peer.
    public static func connect(port: UInt16, from source: String? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                return nil
            }
        }
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Makes reads on `fd` give up after `seconds` (a broken server then fails a test instead of
    /// hanging it).
    public static func setReadTimeout(_ fd: Int32, seconds: Double) {
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads what is there (up to the buffer's size); 0 at the end of the stream, negative on an
    /// error (`errno` says which).
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// Writes every byte; false when the peer is gone. Never raises SIGPIPE.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let n = send(fd, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Writes every byte of `bytes`; false when the peer is gone.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }

    /// Ends the sending side only (the peer reads the end of the stream; reading goes on).
    public static func shutdownWrite(_ fd: Int32) { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Ends both sides, waking any thread blocked on the descriptor.
    public static func shutdownBoth(_ fd: Int32) { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// Closes with RST instead of FIN: the peer sees the connection reset.
    public static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }

    public static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    private static func boundPort(_ fd: Int32) -> UInt16? {
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return named == 0 ? UInt16(bigEndian: actual.sin_port) : nil
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
