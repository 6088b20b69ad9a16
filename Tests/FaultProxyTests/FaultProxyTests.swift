import Foundation
import Synchronization
import Testing
@testable import FaultProxy
import TestSupport

/// A loopback server that reads until EOF, records what it got, and answers with `reply`.
final class RecordingServer: Sendable {
    let port: UInt16
    let received = Mutex<[[UInt8]]>([])
    private let fd: Int32

    init(reply: [UInt8]) throws {
        guard let (fd, port) = LoopbackSocket.listen() else { throw POSIXError(.EADDRINUSE) }
        self.fd = fd
        self.port = port
        Thread { [self] in
            // The accept loop closes the listener itself once `stop()` wakes it: closed under a
            // blocked accept, its number could go to another test's listener (every test runs in
            // one process) and this loop would take that test's connections.
            defer { LoopbackSocket.close(fd) }
            while let client = LoopbackSocket.accept(fd) {
                Thread { [self] in
                    var got: [UInt8] = []
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let n = buffer.withUnsafeMutableBytes { LoopbackSocket.read(client, into: $0) }
                        if n <= 0 { break }
                        got += buffer[0..<n]
                    }
                    received.withLock { $0.append(got) }
                    _ = reply.withUnsafeBytes { LoopbackSocket.writeAll(client, $0) }
                    LoopbackSocket.close(client)
                }.start()
            }
        }.start()
    }

    func stop() { LoopbackSocket.shutdownBoth(fd) }
}

/// Sends `payload` through the proxy, half-closes, and reads the answer to EOF.
func exchange(port: UInt16, payload: [UInt8]) -> [UInt8]? {
    guard let fd = LoopbackSocket.connect(port: port) else { return nil }
    defer { LoopbackSocket.close(fd) }
    _ = payload.withUnsafeBytes { LoopbackSocket.writeAll(fd, $0) }
    _ = shutdown(fd, Int32(SHUT_WR))
    var got: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buffer.withUnsafeMutableBytes { LoopbackSocket.read(fd, into: $0) }
        if n <= 0 { break }
        got += buffer[0..<n]
    }
    return got
}

/// Waits briefly for the server to record `count` connections.
func waitFor(_ server: RecordingServer, count: Int) -> [[UInt8]] {
    for _ in 0..<200 {
        let got = server.received.withLock { $0 }
        if got.count >= count { return got }
        usleep(10_000)
    }
    return server.received.withLock { $0 }
}

@Suite struct FaultProxyTests {
    let payload = (0..<10_000).map { UInt8($0 % 251) }

    @Test func forwardsBothWaysWithoutFaults() throws {
        let server = try RecordingServer(reply: Array("pong".utf8))
        defer { server.stop() }
        let proxy = try FaultProxy(targetPort: server.port)
        defer { proxy.stop() }
        #expect(exchange(port: proxy.port, payload: payload) == Array("pong".utf8))
        #expect(waitFor(server, count: 1).first == payload)
        #expect(proxy.injectedFaults.isEmpty && proxy.connectionCount == 1)
    }

    @Test func cutsTheRequestAfterNBytes() throws {
        let server = try RecordingServer(reply: Array("pong".utf8))
        defer { server.stop() }
        let proxy = try FaultProxy(targetPort: server.port, plan: FaultPlan { _ in .cut(afterBytes: 1234, direction: .upstream) })
        defer { proxy.stop() }
        let answer = exchange(port: proxy.port, payload: payload)
        #expect(answer != Array("pong".utf8))
        #expect(waitFor(server, count: 1).first == Array(payload.prefix(1234)))
    }

    @Test func answers503WithoutReachingTheServer() throws {
        let server = try RecordingServer(reply: Array("pong".utf8))
        defer { server.stop() }
        let proxy = try FaultProxy(targetPort: server.port, plan: FaultPlan { _ in .serviceUnavailable })
        defer { proxy.stop() }
        let answer = try #require(exchange(port: proxy.port, payload: Array("GET / HTTP/1.1\r\n\r\n".utf8)))
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 503"))
        usleep(50_000)
        #expect(server.received.withLock { $0.isEmpty })
    }

    @Test func resetsAtOnce() throws {
        let server = try RecordingServer(reply: Array("pong".utf8))
        defer { server.stop() }
        let proxy = try FaultProxy(targetPort: server.port, plan: FaultPlan { _ in .reset })
        defer { proxy.stop() }
        let answer = exchange(port: proxy.port, payload: payload)
        #expect(answer == nil || answer?.isEmpty == true)
    }

    @Test func seededPlansRepeat() {
        let a = FaultPlan.seeded(7, rate: 0.5)
        let b = FaultPlan.seeded(7, rate: 0.5)
        let c = FaultPlan.seeded(8, rate: 0.5)
        let first = (0..<50).map { a.fault(for: $0) }
        #expect(first == (0..<50).map { b.fault(for: $0) })
        #expect(first != (0..<50).map { c.fault(for: $0) })
        let injected = first.compactMap { $0 }.count
        #expect(injected > 10 && injected < 40)
        #expect((0..<50).allSatisfy { FaultPlan.seeded(1, rate: 0).fault(for: $0) == nil })
    }
}

/// Stopping a proxy twice (explicitly, then again from deinit) must not close a descriptor number
/// that another socket has taken meanwhile: the reliability matrix and these tests run many
/// proxies and servers in one process.
@Suite struct FaultProxyStopTests {
    @Test func stoppingTwiceLeavesOtherSocketsAlone() throws {
        var proxy: FaultProxy? = try FaultProxy(targetPort: 9)
        proxy?.stop()
        // Let the proxy's accept thread finish, so its descriptor number is free to be reused.
        for _ in 0..<200 where isKnownUniquelyReferenced(&proxy) == false { usleep(5_000) }
        // Likely to get the proxy's old listener number.
        let server = try RecordingServer(reply: Array("pong".utf8))
        defer { server.stop() }
        proxy?.stop()
        proxy = nil
        #expect(exchange(port: server.port, payload: [1, 2, 3]) == Array("pong".utf8))
        #expect(waitFor(server, count: 1).first == [1, 2, 3])
    }
}
