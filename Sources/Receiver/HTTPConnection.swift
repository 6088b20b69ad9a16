/// One accepted client socket, used by one thread at a time: reads request heads within the size
/// and time limits, streams bodies to a sink, and writes responses. Owns the descriptor and closes it
/// in `deinit`.
final class HTTPConnection {
    /// What reading a request head produced.
    enum HeadResult {
        /// A well-formed head; its body (if any) follows in the stream.
        case head(HTTPRequestHead)
        /// The peer closed or stayed idle past the keep-alive timeout before sending a request.
        case closed
        /// The head was refused; answer the status and close.
        case refused(HTTPRequestHead.ParseError)
    }

    let descriptor: Int32
    /// The peer's address as `Syscalls.peerAddress(of:)` gives it (an IPv6 address by its /64).
    let peer: String
    private let configuration: ReceiverConfiguration
    /// Told `true` when the connection starts waiting for a request head, and `false` (by the
    /// request handler, through `holdAuthorisedRequest()`) once a request on it is authorised.
    /// In between (waiting for a head, or answering a request that was refused before it was
    /// authorised) the server may evict the connection to make room for a new one; a peer
    /// without the token must never hold a slot that an authorised client needs.
    var evictable: ((Bool) -> Void)?
    /// Bytes received but not yet consumed (the tail of a head read is the start of the body).
    private var pending: [UInt8] = []
    private let chunk: UnsafeMutableRawBufferPointer

    /// Empty lines (CRLF) accepted before a request line; more is a 400.
    static let maxLeadingEmptyLines = 8

    /// How many CRLF pairs `bytes` start with.
    static func leadingEmptyLines(in bytes: [UInt8]) -> Int {
        var count = 0
        while bytes.count >= count * 2 + 2 && bytes[count * 2] == 13 && bytes[count * 2 + 1] == 10 { count += 1 }
        return count
    }

    init(descriptor: Int32, peer: String, configuration: ReceiverConfiguration) {
        self.descriptor = descriptor
        self.peer = peer
        self.configuration = configuration
        chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        chunk.deallocate()
        Syscalls.closeDescriptor(descriptor)
    }

    /// Reads the next request head: waits up to the idle timeout for its first byte, then allows the
    /// header timeout for the rest (so a slow-header client cannot hold a slot).
    func readHead() -> HeadResult {
        evictable?(true)
        var deadline: ContinuousClock.Instant?
        var scanned = 0
        var emptyLines = 0
        while true {
            // Ignore a few empty lines before a request line (RFC 9112 2.2), but not a flood of
            // them: each would otherwise cost a pass over the buffer while holding the slot.
            let leading = Self.leadingEmptyLines(in: pending)
            if leading > 0 {
                emptyLines += leading
                pending.removeFirst(leading * 2)
                scanned = 0
            }
            if emptyLines > Self.maxLeadingEmptyLines {
                return .refused(.init(status: 400, reason: "too many empty lines before the request line"))
            }
            // A TLS ClientHello (a handshake record: 0x16 0x03 ...) from an https:// client: it will
            // never send a request head, so it would wait out the header timeout. A plain answer
            // now makes its TLS library fail at once ("wrong version number").
            if pending.count >= 2 && pending[0] == 0x16 && pending[1] == 0x03 {
                return .refused(.init(status: 400, reason: "this receiver speaks plain http://, not https://"))
            }
            if let end = Self.headEnd(in: pending, from: max(0, scanned - 3)) {
                if end > configuration.maxHeaderBytes {
                    return .refused(.init(status: 431, reason: "request head too large"))
                }
                let head = pending[0..<end]
                defer { pending.removeFirst(end + 4) }
                do {
                    return .head(try HTTPRequestHead(parsing: head,
                                                     maxRequestLineBytes: configuration.maxRequestLineBytes,
                                                     maxHeaderCount: configuration.maxHeaderCount))
                } catch {
                    return .refused(error)
                }
            }
            scanned = pending.count
            if !pending.contains(10) && pending.count > configuration.maxRequestLineBytes {
                return .refused(.init(status: 414, reason: "request line too long"))
            }
            if pending.count > configuration.maxHeaderBytes {
                return .refused(.init(status: 431, reason: "request head too large"))
            }
            let timeout: Double
            if let deadline {
                let left = deadline - ContinuousClock.now
                timeout = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
                if timeout <= 0 { return .refused(.init(status: 408, reason: "request head too slow")) }
            } else {
                timeout = pending.isEmpty ? configuration.idleTimeout : configuration.headerTimeout
            }
            let received: Int
            do {
                guard try Syscalls.waitReadable(descriptor, timeoutMilliseconds: Self.milliseconds(timeout)) else {
                    return pending.isEmpty ? .closed : .refused(.init(status: 408, reason: "request head too slow"))
                }
                received = try Syscalls.receive(descriptor, into: chunk)
            } catch {
                return .closed
            }
            if received == 0 { return .closed }
            if deadline == nil { deadline = ContinuousClock.now + .milliseconds(Int(configuration.headerTimeout * 1000)) }
            pending += UnsafeRawBufferPointer(rebasing: chunk[0..<received])
        }
    }

    /// Streams `length` body bytes to `sink`, in pieces. Returns how many arrived and whether that
    /// is all of them: the peer closing, a reset, a shutdown by a newer transfer, or silence past the
    /// I/O timeout all end the body early (not an error: the caller keeps the prefix), and so does
    /// `sink` returning false. Errors thrown by `sink` propagate.
    func readBody(length: Int64,
                  into sink: (UnsafeRawBufferPointer) throws(ReceiverError) -> Bool) throws(ReceiverError) -> (received: Int64, complete: Bool) {
        var received: Int64 = 0
        if !pending.isEmpty && length > 0 {
            let take = Int(min(Int64(pending.count), length))
            let proceed = try Syscalls.withBytes(pending) { raw throws(ReceiverError) in
                try sink(UnsafeRawBufferPointer(rebasing: raw[0..<take]))
            }
            pending.removeFirst(take)
            received = Int64(take)
            if !proceed { return (received, false) }
        }
        while received < length {
            let want = Int(min(Int64(chunk.count), length - received))
            let n: Int
            do {
                guard try Syscalls.waitReadable(descriptor, timeoutMilliseconds: Self.milliseconds(configuration.ioTimeout)) else {
                    return (received, false)
                }
                n = try Syscalls.receive(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: chunk[0..<want]))
            } catch {
                return (received, false)
            }
            if n == 0 { return (received, false) }
            let proceed = try sink(UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
            received += Int64(n)
            if !proceed { return (received, false) }
        }
        return (received, true)
    }

    /// Reads and drops a body of `length` bytes; false when it did not all arrive.
    func discardBody(length: Int64) -> Bool {
        (try? readBody(length: length) { _ in true })?.complete ?? false
    }

    /// Sends a final response; false when the peer is gone or too slow (send timeout).
    @discardableResult
    func send(_ response: HTTPResponse, close: Bool, headOnly: Bool = false) -> Bool {
        let bytes = response.serialized(close: close, headOnly: headOnly)
        do {
            try Syscalls.withBytes(bytes) { raw throws(ReceiverError) in try Syscalls.sendAll(descriptor, raw) }
            return true
        } catch {
            return false
        }
    }

    /// Sends a response head announcing `length` bytes, then streams them from the file at `path`.
    /// False when the peer is gone or the file could not be read (the connection must then close).
    func sendFile(_ response: HTTPResponse, path: [UInt8], length: Int64, close: Bool) -> Bool {
        var head = response
        head.body = []
        head.streamedLength = length
        guard send(head, close: close, headOnly: true) else { return false }
        do {
            try Syscalls.sendFile(descriptor, path: path, count: length)
            return true
        } catch {
            return false
        }
    }

    /// Sends a response head announcing `length` bytes that the caller then sends itself (with
    /// `Syscalls.sendAll` on `descriptor`); false when the peer is gone.
    func sendStreamedHead(_ response: HTTPResponse, length: Int64, close: Bool) -> Bool {
        var head = response
        head.body = []
        head.streamedLength = length
        return send(head, close: close, headOnly: true)
    }

    /// Marks the connection as carrying an authorised request, which the server must finish:
    /// it is not evicted to make room until it waits for its next head.
    func holdAuthorisedRequest() {
        evictable?(false)
    }

    /// The longest a connection lingers before it is closed (`lingerBeforeClose()`).
    static let lingerLimit: Duration = .seconds(1)

    /// Half-closes the connection and discards what the client still sends, for a short while
    /// (`lingerLimit` in all, and at most 8 MiB), so that a response sent before the end of a
    /// body is read rather than lost to a reset. Never longer: a peer trickling bytes must not
    /// keep its slot (it used to, for as long as it sent a byte within every second).
    func lingerBeforeClose() {
        Syscalls.shutdownWrite(descriptor)
        let deadline = ContinuousClock.now + Self.lingerLimit
        var discarded = 0
        while discarded < 8 << 20 {
            let left = deadline - ContinuousClock.now
            guard left > .zero,
                  let ready = try? Syscalls.waitReadable(descriptor, timeoutMilliseconds: Self.milliseconds(left)), ready,
                  let n = try? Syscalls.receive(descriptor, into: chunk),
                  n > 0 else { return }
            discarded += n
        }
    }

    /// Ends the exchange abruptly (after a 104, instead of a 5xx).
    func drop() {
        Syscalls.shutdownBoth(descriptor)
    }

    static func headEnd(in bytes: [UInt8], from: Int) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var i = from
        while i + 3 < bytes.count {
            if bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    private static func milliseconds(_ seconds: Double) -> Int32 {
        Int32(clamping: Int((seconds * 1000).rounded(.up)))
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        milliseconds(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}
