import Foundation
import Synchronization
import TestSupport

/// A TCP proxy on 127.0.0.1 that forwards to a local server and injects faults: connections cut
/// after N bytes either way, stalls, delays, resets, and 503 answers. Faults follow a `FaultPlan`,
/// so a seeded run repeats exactly. For tests and the reliability matrix; loopback only.
public final class FaultProxy: Sendable {
    /// The port clients connect to.
    public let port: UInt16
    private let listener: Int32
    private let targetPort: UInt16
    private let plan: FaultPlan
    private let state = Mutex(State())

    private struct State {
        var connections = 0
        var injected: [Fault] = []
        var open: Set<Int32> = []
        var stopped = false
        var upstreamBytes = 0
        var downstreamBytes = 0
    }

    /// Starts listening on a free loopback port, forwarding to `targetPort`.
    public init(targetPort: UInt16, plan: FaultPlan = .none) throws {
        // A client that vanishes mid-write must be a failed write, not a SIGPIPE that ends the process.
        signal(SIGPIPE, SIG_IGN)
        guard let (fd, port) = LoopbackSocket.listen() else {
            throw POSIXError(.EADDRINUSE)
        }
        self.listener = fd
        self.port = port
        self.targetPort = targetPort
        self.plan = plan
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "fault-proxy-accept"
        thread.start()
    }

    /// Connections accepted so far.
    public var connectionCount: Int { state.withLock { $0.connections } }

    /// The faults injected so far, in order.
    public var injectedFaults: [Fault] { state.withLock { $0.injected } }

    /// Bytes forwarded so far in `direction` (request heads included), over every connection: the
    /// reliability matrix compares the upstream total with the file bytes to measure re-sending.
    public func bytesForwarded(_ direction: Fault.Direction) -> Int {
        state.withLock { direction == .upstream ? $0.upstreamBytes : $0.downstreamBytes }
    }

    /// Stops accepting and ends every open connection. Calling it again does nothing.
    public func stop() {
        let first = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            s.stopped = true
            // Under the lock: a connection's thread removes its descriptors here before closing
            // them, so none of these numbers can have been reused by another socket yet.
            for fd in s.open { LoopbackSocket.shutdownBoth(fd) }
            return true
        }
        // Wakes the accept loop, which closes the listener itself: closing it here would let the
        // number be reused by another socket before the loop's next accept (or a second stop)
        // touched it.
        if first { LoopbackSocket.shutdownBoth(listener) }
    }

    deinit { stop() }

    private func acceptLoop() {
        defer { LoopbackSocket.close(listener) }
        while let client = LoopbackSocket.accept(listener) {
            let (index, stopped) = state.withLock { s -> (Int, Bool) in
                s.connections += 1
                return (s.connections - 1, s.stopped)
            }
            if stopped { LoopbackSocket.close(client); return }
            let fault = plan.fault(for: index)
            if let fault { state.withLock { $0.injected.append(fault) } }
            let thread = Thread { [self] in handle(client: client, fault: fault) }
            thread.start()
        }
    }

    private func track(_ fd: Int32, open: Bool) {
        state.withLock { s in
            if open { s.open.insert(fd) } else { s.open.remove(fd) }
        }
    }

    private func handle(client: Int32, fault: Fault?) {
        switch fault {
        case .reset:
            LoopbackSocket.reset(client)
            return
        case .serviceUnavailable, .busy:
            // Read the request head, answer 503, close.
            var buffer = [UInt8](repeating: 0, count: 16384)
            _ = buffer.withUnsafeMutableBytes { LoopbackSocket.read(client, into: $0) }
            var retryAfter = ""
            if case .busy(let seconds) = fault { retryAfter = "Retry-After: \(seconds)\r\n" }
            let response = Array("HTTP/1.1 503 Service Unavailable\r\n\(retryAfter)Content-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            _ = response.withUnsafeBytes { LoopbackSocket.writeAll(client, $0) }
            LoopbackSocket.close(client)
            return
        case .captivePortal:
            var buffer = [UInt8](repeating: 0, count: 16384)
            _ = buffer.withUnsafeMutableBytes { LoopbackSocket.read(client, into: $0) }
            let page = "<!DOCTYPE html><html><head><title>Hotel Wi-Fi</title></head><body>Please log in.</body></html>"
            let response = Array("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(page.utf8.count)\r\nConnection: close\r\n\r\n\(page)".utf8)
            _ = response.withUnsafeBytes { LoopbackSocket.writeAll(client, $0) }
            LoopbackSocket.close(client)
            return
        default:
            break
        }
        guard let server = LoopbackSocket.connect(port: targetPort) else {
            LoopbackSocket.reset(client)
            return
        }
        track(client, open: true)
        track(server, open: true)
        let done = DispatchGroup()
        for (from, to, direction) in [(client, server, Fault.Direction.upstream), (server, client, Fault.Direction.downstream)] {
            done.enter()
            Thread { [self] in
                pump(from: from, to: to, direction: direction, fault: fault, peers: (client, server))
                done.leave()
            }.start()
        }
        done.wait()
        track(client, open: false)
        track(server, open: false)
        LoopbackSocket.close(client)
        LoopbackSocket.close(server)
    }

    private func count(_ bytes: Int, _ direction: Fault.Direction) {
        state.withLock { s in
            if direction == .upstream { s.upstreamBytes += bytes } else { s.downstreamBytes += bytes }
        }
    }

    private func pump(from: Int32, to: Int32, direction: Fault.Direction, fault: Fault?, peers: (Int32, Int32)) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var passed = 0
        var stalled = false
        var framing = RequestFraming()
        while true {
            let n = buffer.withUnsafeMutableBytes { LoopbackSocket.read(from, into: $0) }
            if n <= 0 { break }
            if case .flipBody(let at) = fault, direction == .upstream {
                for index in framing.bodyBytesToFlip(in: buffer[0..<n], at: at) { buffer[index] ^= 0x01 }
            }
            var chunk = buffer[0..<n]
            switch fault {
            case .cut(let limit, let d) where d == direction:
                if passed + n >= limit {
                    chunk = buffer[0..<max(0, limit - passed)]
                    if chunk.withUnsafeBytes({ LoopbackSocket.writeAll(to, $0) }) { count(chunk.count, direction) }
                    LoopbackSocket.shutdownBoth(peers.0)
                    LoopbackSocket.shutdownBoth(peers.1)
                    return
                }
            case .stall(let after, let d, let ms) where d == direction && !stalled && passed + n >= after:
                stalled = true
                usleep(useconds_t(max(0, ms) * 1000))
            case .delay(let ms):
                usleep(useconds_t(max(0, ms) * 1000))
            default:
                break
            }
            passed += chunk.count
            if !chunk.withUnsafeBytes({ LoopbackSocket.writeAll(to, $0) }) { break }
            count(chunk.count, direction)
        }
        // One side finished: pass the end on so the other side's read returns.
        _ = Glibc.shutdown(to, Int32(SHUT_WR))
        if direction == .downstream { LoopbackSocket.shutdownBoth(peers.0) }
    }
}

/// Follows HTTP/1.1 requests through an upstream byte stream (heads, then `Content-Length`
/// bodies, on a keep-alive connection one after another) to find, in each body, the byte
/// `Fault.flipBody` flips. Chunked bodies are passed untouched.
struct RequestFraming {
    private var head: [UInt8] = []
    /// Body bytes of the current request still to come, and where the flip falls in them.
    private var bodyLeft = 0
    private var bodyLength = 0

    /// The indices of `chunk` (indices of the underlying buffer) to flip.
    mutating func bodyBytesToFlip(in chunk: ArraySlice<UInt8>, at offset: Int) -> [Int] {
        var flips: [Int] = []
        var index = chunk.startIndex
        while index < chunk.endIndex {
            if bodyLeft > 0 {
                let take = min(bodyLeft, chunk.endIndex - index)
                let position = bodyLength - bodyLeft  // offset in the body of chunk[index]
                let target = min(offset, bodyLength - 1)
                if target >= position && target < position + take { flips.append(index + (target - position)) }
                bodyLeft -= take
                index += take
                continue
            }
            head.append(chunk[index])
            index += 1
            if head.count >= 4 && head.suffix(4).elementsEqual([13, 10, 13, 10]) {
                bodyLength = Self.contentLength(head)
                bodyLeft = bodyLength
                head.removeAll(keepingCapacity: true)
            } else if head.count > 65536 {
                head.removeAll(keepingCapacity: true)  // not HTTP: never flip
            }
        }
        return flips
    }

    private static func contentLength(_ head: [UInt8]) -> Int {
        for line in String(decoding: head, as: UTF8.self).split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length",
               let value = Int(parts[1].trimmingCharacters(in: .whitespaces)) { return max(0, value) }
        }
        return 0
    }
}
