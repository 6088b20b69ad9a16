import Synchronization
import TestSupport

/// A TCP socket on 127.0.0.1 for the fake server, owning its descriptor: the calls are
/// `TestSupport.LoopbackSocket`'s; this class adds the one rule about closing below.
/// `@unchecked Sendable`: the descriptor is an integer closed exactly once (guarded by an atomic).
final class TestSocket: @unchecked Sendable {
    private let descriptor: Int32
    private let closed = Atomic<Bool>(false)

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close() }

    /// Listens on 127.0.0.1 on an ephemeral port; nil if the socket cannot be set up.
    static func listenOnLoopback() -> (socket: TestSocket, port: UInt16)? {
        guard let (fd, port) = LoopbackSocket.listen() else { return nil }
        return (TestSocket(descriptor: fd), port)
    }

    /// A loopback port with nothing listening on it (bound, then closed).
    static func unusedLoopbackPort() -> UInt16? {
        LoopbackSocket.freePort()
    }

    /// Waits for the next connection; nil once the listener is shut down.
    func accept() -> TestSocket? {
        LoopbackSocket.accept(descriptor).map { TestSocket(descriptor: $0) }
    }

    /// Reads what is available (up to `maxCount` bytes); an empty array at end of stream or on error.
    func read(maxCount: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maxCount)
        let n = buffer.withUnsafeMutableBytes { LoopbackSocket.read(descriptor, into: $0) }
        return n > 0 ? Array(buffer[0..<n]) : []
    }

    /// Writes all bytes; false when the peer is gone.
    func write(_ bytes: [UInt8]) -> Bool {
        LoopbackSocket.writeAll(descriptor, bytes)
    }

    /// Shuts both directions down: a thread blocked in accept or recv on this socket wakes with an
    /// error. The descriptor stays open, so its number cannot be handed to a new socket while that
    /// thread may still use it; the thread that owns the socket closes it when done.
    func shutdown() {
        guard !closed.load(ordering: .acquiring) else { return }
        LoopbackSocket.shutdownBoth(descriptor)
    }

    /// Shuts both directions down and closes the descriptor. Only for the thread that uses the
    /// socket (or when none does): closed under another thread's accept or recv, the number
    /// could be reused by a new socket, which that thread would then read — another test's
    /// connections served by this one (a flaky failure seen in the upload tests).
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        LoopbackSocket.shutdownBoth(descriptor)
        LoopbackSocket.close(descriptor)
    }
}
