import Foundation
import Synchronization
import TestSupport

/// A TCP relay on 127.0.0.1 that understands just enough HTTP/1.1 (request heads and
/// `Content-Length` bodies; responses pass through untouched) to stand between the client and the
/// receiver and
///
/// - count the request body bytes it handed to the receiver (what the receiver received),
/// - record every request line in order,
/// - answer chosen requests itself (an `OPTIONS` answered 501, as a server without the protocol),
/// - rewrite request heads (a wrong `Upload-Offset`, an unknown interop version),
/// - hold the first connection after N bytes until the test releases it (to restart the receiver
///   while an upload is in flight, without racing the client).
///
/// One thread per direction per connection, never Swift's cooperative pool. HTTP/1.1 clients do
/// not pipeline, so a local answer never interleaves with a forwarded response.
final class HTTPRelay: Sendable {
    /// A parsed request head.
    struct RequestHead: Sendable {
        var method: String
        var target: String
        var version: String
        var fields: [(name: String, value: String)]

        /// The value of the first field named `name` (any case); setting replaces it where it is.
        subscript(name: String) -> String? {
            get { fields.first { $0.name.lowercased() == name.lowercased() }?.value }
            set {
                if let index = fields.firstIndex(where: { $0.name.lowercased() == name.lowercased() }) {
                    if let newValue { fields[index].value = newValue } else { fields.remove(at: index) }
                } else if let newValue {
                    fields.append((name, newValue))
                }
            }
        }

        /// Parses `METHOD target version` and the fields; nil when the head is not HTTP/1.x.
        init?(bytes: ArraySlice<UInt8>) {
            let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
            let requestLine = lines.first?.split(separator: " ", omittingEmptySubsequences: false) ?? []
            guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return nil }
            method = String(requestLine[0])
            target = String(requestLine[1])
            version = String(requestLine[2])
            fields = []
            for line in lines.dropFirst() where !line.isEmpty {
                guard let colon = line.firstIndex(of: ":") else { return nil }
                fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
        }

        /// The head as sent on the wire, ending with the empty line.
        var serialized: [UInt8] {
            var text = "\(method) \(target) \(version)\r\n"
            for field in fields { text += "\(field.name): \(field.value)\r\n" }
            return Array((text + "\r\n").utf8)
        }
    }

    /// What the relay does besides forwarding.
    struct Behaviour: Sendable {
        /// A raw HTTP response to send instead of forwarding the request, or nil to forward it.
        var answer: @Sendable (RequestHead) -> String? = { _ in nil }
        /// Changes a head before it is forwarded; the `Int` counts earlier requests with the same
        /// method, on any connection.
        var rewrite: @Sendable (inout RequestHead, Int) -> Void = { _, _ in }
        /// On the first connection, stop forwarding after this many bytes (heads and bodies) until
        /// `release()`; while held, the receiver closing its side is not passed on to the client.
        var holdAfterBytes: Int?

        init(answer: @escaping @Sendable (RequestHead) -> String? = { _ in nil },
             rewrite: @escaping @Sendable (inout RequestHead, Int) -> Void = { _, _ in },
             holdAfterBytes: Int? = nil) {
            self.answer = answer
            self.rewrite = rewrite
            self.holdAfterBytes = holdAfterBytes
        }

        /// Answers every `OPTIONS` with `501 Not Implemented`, like a server without the protocol.
        static let optionsNotImplemented = Behaviour(answer: { head in
            head.method == "OPTIONS" ? "HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\n\r\n" : nil
        })
    }

    /// A request as it reached the relay (before any rewrite), with the body bytes the receiver
    /// had been handed before it.
    struct Relayed: Sendable {
        var head: RequestHead
        var bodyBytesBefore: Int64
    }

    /// Why a relay could not start.
    struct StartError: Error {}

    /// The port clients connect to.
    let port: UInt16
    private let targetPort: UInt16
    private let listener: Int32
    private let behaviour: Behaviour
    private let state = Mutex(State())

    private struct State {
        var relayed: [Relayed] = []
        var bodyBytes: Int64 = 0
        var connections = 0
        var open: Set<Int32> = []
        var stopped = false
        var listenerClosed = false
        var held = false
        var released = false
    }

    /// Starts listening on a free loopback port, forwarding to 127.0.0.1:`targetPort`.
    init(targetPort: Int, behaviour: Behaviour = Behaviour()) throws {
        guard let (fd, port) = LoopbackSocket.listen(), let target = UInt16(exactly: targetPort) else { throw StartError() }
        listener = fd
        self.port = port
        self.targetPort = target
        self.behaviour = behaviour
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "interop-relay-accept"
        thread.start()
    }

    deinit { stop() }

    /// The URL of the receiver's upload target through this relay.
    var uploadURL: String { "http://127.0.0.1:\(port)/uploads" }

    /// Every request relayed or answered, in order.
    var relayed: [Relayed] { state.withLock { $0.relayed } }

    /// The methods of `relayed`, in order.
    var methods: [String] { relayed.map(\.head.method) }

    /// The requests with this method, in order.
    func requests(_ method: String) -> [Relayed] { relayed.filter { $0.head.method == method } }

    /// Request body bytes handed to the receiver so far.
    var bodyBytesForwarded: Int64 { state.withLock { $0.bodyBytes } }

    /// Connections accepted so far.
    var connectionCount: Int { state.withLock { $0.connections } }

    /// Whether the hold point was reached (and not yet released).
    var isHeld: Bool { state.withLock { $0.held && !$0.released } }

    /// Lets a held connection go on.
    func release() { state.withLock { $0.released = true } }

    /// Stops accepting and ends every open connection (releasing any hold). Only the first call
    /// does anything. Descriptors are shut down and closed only under the lock, so a number
    /// another test's socket or pipe has reused is never touched.
    func stop() {
        state.withLock { state in
            if state.stopped { return }
            state.stopped = true
            state.released = true
            if !state.listenerClosed { LoopbackSocket.shutdownBoth(listener) }
            for fd in state.open { LoopbackSocket.shutdownBoth(fd) }
        }
    }

    private func acceptLoop() {
        while let client = LoopbackSocket.accept(listener) {
            let (index, stopped) = state.withLock { state -> (Int, Bool) in
                state.connections += 1
                if !state.stopped { state.open.insert(client) }
                return (state.connections - 1, state.stopped)
            }
            if stopped {
                LoopbackSocket.close(client)
                break
            }
            let thread = Thread { [self] in serve(client: client, index: index) }
            thread.start()
        }
        state.withLock { state in
            state.listenerClosed = true
            LoopbackSocket.close(listener)
        }
    }

    /// Forgets and closes descriptors in one step.
    private func close(_ fds: [Int32]) {
        state.withLock { state in
            for fd in fds {
                state.open.remove(fd)
                LoopbackSocket.close(fd)
            }
        }
    }

    private func waitForRelease() {
        while !state.withLock({ $0.released }) { usleep(5_000) }
    }

    private func serve(client: Int32, index: Int) {
        guard let server = LoopbackSocket.connect(port: targetPort) else {
            close([client])
            return
        }
        let admitted = state.withLock { state -> Bool in
            if !state.stopped { state.open.insert(server) }
            return !state.stopped
        }
        guard admitted else {
            close([client])
            LoopbackSocket.close(server)
            return
        }
        let clientWrites = SerializedWriter(descriptor: client)
        let holds = index == 0 && behaviour.holdAfterBytes != nil
        let downstreamDone = DispatchSemaphore(value: 0)
        let downstream = Thread { [self] in
            pumpResponses(from: server, to: clientWrites)
            if holds && state.withLock({ $0.held }) { waitForRelease() }
            LoopbackSocket.shutdownBoth(client)
            downstreamDone.signal()
        }
        downstream.start()
        relayRequests(from: client, to: server, holds: holds, clientWrites: clientWrites)
        LoopbackSocket.shutdownWrite(server)
        downstreamDone.wait()
        close([client, server])
    }

    /// Responses pass through byte for byte.
    private func pumpResponses(from server: Int32, to client: SerializedWriter) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { LoopbackSocket.read(server, into: $0) }
            if n <= 0 { return }
            let written = buffer.withUnsafeBytes { client.write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            if !written { return }
        }
    }

    /// Reads requests one by one, answering, rewriting and forwarding them; returns when either
    /// side is gone or a request cannot be framed.
    private func relayRequests(from client: Int32, to server: Int32, holds: Bool, clientWrites: SerializedWriter) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var forwarded = 0
        var holdPending = holds

        /// Sends bytes upstream, stopping at the hold point once.
        func forward(_ bytes: UnsafeRawBufferPointer, body: Bool) -> Bool {
            var rest = bytes
            if holdPending, let limit = behaviour.holdAfterBytes, forwarded + rest.count >= limit {
                let head = UnsafeRawBufferPointer(rebasing: rest[0..<(limit - forwarded)])
                guard send(head, body: body) else { return false }
                holdPending = false
                state.withLock { $0.held = true }
                waitForRelease()
                rest = UnsafeRawBufferPointer(rebasing: rest[head.count...])
            }
            return send(rest, body: body)
        }

        func send(_ bytes: UnsafeRawBufferPointer, body: Bool) -> Bool {
            guard LoopbackSocket.writeAll(server, bytes) else { return false }
            forwarded += bytes.count
            if body { state.withLock { $0.bodyBytes += Int64(bytes.count) } }
            return true
        }

        func readMore() -> Int {
            buffer.withUnsafeMutableBytes { LoopbackSocket.read(client, into: $0) }
        }

        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            // The head: everything up to the empty line.
            var headEnd: Int?
            while true {
                if pending.count >= 4, let end = (0...(pending.count - 4)).first(where: { pending[$0..<($0 + 4)].elementsEqual(terminator) }) {
                    headEnd = end
                    break
                }
                if pending.count > 65_536 { return }
                let n = readMore()
                if n <= 0 { return }
                pending.append(contentsOf: buffer[0..<n])
            }
            guard let end = headEnd, var head = RequestHead(bytes: pending[0..<end]) else { return }
            pending.removeFirst(end + 4)
            if head["transfer-encoding"] != nil { return }
            guard let length = Int(head["content-length"] ?? "0"), length >= 0 else { return }
            let ordinal = state.withLock { state -> Int in
                state.relayed.append(Relayed(head: head, bodyBytesBefore: state.bodyBytes))
                return state.relayed.dropLast().filter { $0.head.method == head.method }.count
            }

            let answer = behaviour.answer(head)
            if answer == nil {
                behaviour.rewrite(&head, ordinal)
                let sent = head.serialized.withUnsafeBytes { forward($0, body: false) }
                if !sent { return }
            }
            // The body: first what was read with the head, then straight from the socket.
            var remaining = length
            let buffered = min(remaining, pending.count)
            if buffered > 0 {
                if answer == nil {
                    let sent = pending.withUnsafeBytes { forward(UnsafeRawBufferPointer(rebasing: $0[0..<buffered]), body: true) }
                    if !sent { return }
                }
                pending.removeFirst(buffered)
                remaining -= buffered
            }
            while remaining > 0 {
                let n = readMore()
                if n <= 0 { return }
                let take = min(n, remaining)
                if answer == nil {
                    let sent = buffer.withUnsafeBytes { forward(UnsafeRawBufferPointer(rebasing: $0[0..<take]), body: true) }
                    if !sent { return }
                }
                if take < n { pending.append(contentsOf: buffer[take..<n]) }
                remaining -= take
            }
            if let answer {
                let written = Array(answer.utf8).withUnsafeBytes { clientWrites.write($0) }
                if !written { return }
            }
        }
    }
}

/// Writes to one descriptor from several threads, one whole write at a time.
private final class SerializedWriter: Sendable {
    private let descriptor: Int32
    private let lock = Mutex(())

    init(descriptor: Int32) { self.descriptor = descriptor }

    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        lock.withLock { _ in LoopbackSocket.writeAll(descriptor, bytes) }
    }
}
