#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A TCP socket on 127.0.0.1 for the fake server. Every POSIX socket call of the tests is here.
/// `@unchecked Sendable`: the descriptor is an integer closed exactly once (guarded by an atomic).
final class TestSocket: @unchecked Sendable {
    private let descriptor: Int32
    private let closed = Atomic<Bool>(false)

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close() }

    /// Listens on 127.0.0.1 on an ephemeral port; nil if the socket cannot be set up.
    static func listenOnLoopback() -> (socket: TestSocket, port: UInt16)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        let listener = TestSocket(descriptor: fd)
        var yes: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { return nil }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        return (listener, UInt16(bigEndian: address.sin_port))
    }

    /// A loopback port with nothing listening on it (bound, then closed).
    static func unusedLoopbackPort() -> UInt16? {
        guard let (socket, port) = listenOnLoopback() else { return nil }
        socket.close()
        return port
    }

    /// Waits for the next connection; nil once the listener is shut down.
    func accept() -> TestSocket? {
        while true {
            let fd = Glibc.accept(descriptor, nil, nil)
            if fd >= 0 { return TestSocket(descriptor: fd) }
            if errno != EINTR { return nil }
        }
    }

    /// Reads what is available (up to `maxCount` bytes); an empty array at end of stream or on error.
    func read(maxCount: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maxCount)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, maxCount, 0) }
            if n > 0 { return Array(buffer[0..<n]) }
            if n < 0 && errno == EINTR { continue }
            return []
        }
    }

    /// Writes all bytes; false when the peer is gone.
    func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return send(descriptor, base + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Shuts both directions down: a thread blocked in accept or recv on this socket wakes with an
    /// error. The descriptor stays open, so its number cannot be handed to a new socket while that
    /// thread may still use it; the thread that owns the socket closes it when done.
    func shutdown() {
        guard !closed.load(ordering: .acquiring) else { return }
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
    }

    /// Shuts both directions down and closes the descriptor. Only for the thread that uses the
    /// socket (or when none does): closed under another thread's accept or recv, the number
    /// could be reused by a new socket, which that thread would then read — another test's
    /// connections served by this one (a flaky failure seen in the upload tests).
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
        _ = Glibc.close(descriptor)
    }
}
