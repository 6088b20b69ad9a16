#if canImport(Glibc)
import Glibc
#endif

/// The socket calls the test relay makes, each wrapped once (EINTR retried). Loopback only.
enum LoopbackSocket {
    /// A listening TCP socket on 127.0.0.1 at a free port; returns (descriptor, port).
    static func listen() -> (Int32, UInt16)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            _ = Glibc.close(fd)
            return nil
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            _ = Glibc.close(fd)
            return nil
        }
        return (fd, UInt16(bigEndian: actual.sin_port))
    }

    /// The next connection on a listening socket; nil once the listener was shut down.
    static func accept(_ fd: Int32) -> Int32? {
        while true {
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 { return client }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// A socket connected to 127.0.0.1:`port`, or nil when nothing listens there.
    static func connect(port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            _ = Glibc.close(fd)
            return nil
        }
        return fd
    }

    /// Reads what is there (up to the buffer's size); 0 at the end of the stream, negative on error.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// Writes every byte; false when the peer is gone.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
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

    /// Ends the sending side only (the peer reads the end of the stream; reading goes on).
    static func shutdownWrite(_ fd: Int32) { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Ends both sides, waking any thread blocked on the descriptor.
    static func shutdownBoth(_ fd: Int32) { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
