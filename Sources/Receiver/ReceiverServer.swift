import Dispatch
import Foundation
import Synchronization

/// The reference upload receiver behind `photodrain serve`: an HTTP/1.1 server on POSIX sockets
/// with one thread per connection (never Swift's cooperative pool), at most
/// `maxConnections` at once; when all are taken, of the connections that hold no authorised
/// request (waiting for a request head, or being refused one) the one that has waited longest
/// is closed to admit a new one.
///
///     let server = ReceiverServer(configuration: .loopback(directory: dir))
///     let port = try server.start()      // listening; requests are served on background threads
///     ...
///     server.stop()                      // closes the listener and every connection, waits for them
///
/// `run()` starts (if needed) and blocks the calling thread until `stop()` is called. Expired
/// uploads are removed by an `ExpirySweeper` on a thread of its own, never by a request, and
/// stored objects are hashed again by an `ObjectScrubber` on another (unless its rate is 0).
public final class ReceiverServer: Sendable {
    /// The configuration the server was made with.
    public let configuration: ReceiverConfiguration

    private struct State: Sendable {
        var listener: Int32?
        var wakeRead: Int32?
        var wakeWrite: Int32?
        var port: Int?
        var store: UploadStore?
        var spaces: AccountSpaces?
        /// Set by the first `start()`, so a second one fails even while the first is binding.
        var started = false
        var stopping = false
        /// Open client connections, so `stop()` can end them.
        var connections: Set<Int32> = []
        /// Connections that may be evicted to make room, and since when they started waiting for
        /// their request head: idle, with a partial head, or answering a request that was not
        /// authorised (see `HTTPConnection.evictable`).
        var evictable: [Int32: ContinuousClock.Instant] = [:]
        /// Connections shut down to make room, whose threads have not finished yet.
        var evicted: Set<Int32> = []
    }

    private let state = Mutex(State())
    /// Entered by the accept thread and by every connection thread.
    private let threads = DispatchGroup()

    /// Makes a server; nothing happens until `start()` or `run()`.
    public init(configuration: ReceiverConfiguration) {
        self.configuration = configuration
    }

    /// Starts a receiver on 127.0.0.1 with an ephemeral port, storing in `directory`: for the
    /// `demo` and for other modules' tests. Read `port` or `uploadURL`, and `stop()` it when done.
    /// Throws what `start()` throws.
    public static func startLoopback(directory: String, token: String? = nil, faultInjection: FaultInjection? = nil,
                                     log: @escaping @Sendable (String) -> Void = { _ in }) throws(ReceiverError) -> ReceiverServer {
        var configuration = ReceiverConfiguration.loopback(directory: directory, token: token, log: log)
        configuration.faultInjection = faultInjection
        let server = ReceiverServer(configuration: configuration)
        try server.start()
        return server
    }

    /// The bound port once started, else nil.
    public var port: Int? { state.withLock { $0.port } }

    /// The base URL of the upload target, e.g. `http://127.0.0.1:8080/uploads`, once started.
    public var uploadURL: String? {
        guard let port else { return nil }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "http://\(host):\(port)/uploads"
    }

    /// Opens the store (creating the directory, recovering partial uploads), binds and listens, and
    /// starts accepting on a background thread. Returns the bound port (the chosen one when the
    /// configuration says 0). Throws `.invalidConfiguration`, `.bindFailed`, `.io`, or
    /// `.invalidState` when already started or stopped.
    @discardableResult
    public func start() throws(ReceiverError) -> Int {
        try configuration.validate()
        try state.withLock { state throws(ReceiverError) in
            if state.started || state.stopping {
                throw ReceiverError(code: .invalidState, message: "the receiver was already started")
            }
            state.started = true
        }
        Syscalls.ignoreBrokenPipes()
        // Bind first: a bad host or a busy port must not leave a storage directory behind.
        let listener: Int32
        do {
            listener = try Syscalls.listenTCP(host: configuration.host, port: configuration.port, backlog: 128)
        } catch {
            state.withLock { $0.started = false }
            throw error
        }
        let port: Int
        let wake: (Int32, Int32)
        let handler: RequestHandler
        let sweeper: ExpirySweeper
        let scrubber: ObjectScrubber
        let store: UploadStore
        let spaces: AccountSpaces
        let mirror: S3AccountBookMirror?
        do {
            port = try Syscalls.boundPort(listener)
            store = try UploadStore(directory: configuration.directory, partialTTL: configuration.partialTTL,
                                    bootID: UploadStore.bootID(at: configuration.bootIDPath), syncMode: configuration.syncMode, layout: configuration.layout,
                                    log: configuration.log)
            let registry = TransferRegistry()
            // On a bucket the account book is the bucket's, mirrored into the directory.
            mirror = configuration.s3Store.map { S3AccountBookMirror(bucket: S3Bucket(configuration: $0), directory: store.root) }
            try mirror?.sync()
            let access = try AccessControl(directory: store.root, legacyToken: configuration.effectiveToken,
                                           log: configuration.log, now: configuration.now)
            spaces = try AccountSpaces(defaultStore: store, configuration: configuration, registry: registry)
            handler = RequestHandler(configuration: configuration, spaces: spaces, access: access)
            sweeper = ExpirySweeper(spaces: spaces, registry: registry, configuration: configuration)
            scrubber = ObjectScrubber(spaces: spaces, configuration: configuration)
            wake = try Syscalls.makePipe()
        } catch {
            Syscalls.closeDescriptor(listener)
            state.withLock { $0.started = false }
            throw error
        }
        state.withLock { state in
            state.listener = listener
            state.wakeRead = wake.0
            state.wakeWrite = wake.1
            state.port = port
            state.store = store
            state.spaces = spaces
        }
        threads.enter()
        Thread.detachNewThread { [self] in
            acceptLoop(listener: listener, wake: wake.0, handler: handler)
            threads.leave()
        }
        // The accept loop's wake pipe: none of them reads it, so stop()'s one byte wakes all three.
        threads.enter()
        Thread.detachNewThread { [self] in
            sweeper.run(until: wake.0)
            threads.leave()
        }
        if let mirror {
            threads.enter()
            Thread.detachNewThread { [self] in
                mirror.run(until: wake.0, log: configuration.log)
                threads.leave()
            }
        }
        // On a bucket there is nothing on disk to scrub (the bucket's own checks stand for it).
        if configuration.scrubBytesPerSecond > 0 && configuration.s3Store == nil {
            threads.enter()
            Thread.detachNewThread { [self] in
                scrubber.run(until: wake.0)
                threads.leave()
            }
        }
        configuration.log("receiver listening on \(configuration.host):\(port), storing in \(configuration.s3Store?.destination ?? configuration.directory)")
        return port
    }

    /// Every object of the account `default` stored so far, oldest first (what `GET /objects`
    /// lists for it), read from the
    /// sidecars on disk. Throws `.invalidState` before `start()`, `.io` when the directory cannot
    /// be listed.
    public func storedObjects() throws(ReceiverError) -> [StoredObject] {
        guard let store = state.withLock({ $0.store }) else {
            throw ReceiverError(code: .invalidState, message: "the receiver has not been started")
        }
        return try store.objects()
    }

    /// Runs one scrub pass now, on the calling thread, as the background scrub does: every stored
    /// object's bytes hashed again, a corrupt one moved to `quarantine/` and logged. With
    /// `bytesPerSecond` it is paced as `scrubBytesPerSecond` paces the background, except that
    /// each pause the pacing asks for is handed to `wait` instead of slept, and counted as time
    /// passed: a test checks the pacing without waiting for it. Throws `.invalidState` before
    /// `start()`.
    public func scrubOnce(bytesPerSecond: Int64? = nil, wait: (Duration) -> Void = { _ in }) throws(ReceiverError) -> ScrubReport {
        guard let spaces = state.withLock({ $0.spaces }) else {
            throw ReceiverError(code: .invalidState, message: "the receiver has not been started")
        }
        let clock = ContinuousClock()
        let began = clock.now
        var waited = Duration.zero
        return ObjectScrubber(spaces: spaces, configuration: configuration).pass(
            bytesPerSecond: bytesPerSecond, elapsed: { clock.now - began + waited },
            wait: { pause in
                if pause > .zero {
                    waited += pause
                    wait(pause)
                }
                return false
            })
    }

    /// The path of a stored object's bytes, or nil for an unknown id.
    public func contentPath(ofObject id: String) -> String? {
        guard let store = state.withLock({ $0.store }), store.object(id) != nil else { return nil }
        return store.objectPath(id)
    }

    /// Starts (unless started) and blocks the calling thread until `stop()` has finished. Call it
    /// from a thread of your own or the main thread, never from a Swift concurrency task.
    public func run() throws(ReceiverError) {
        if port == nil { try start() }
        threads.wait()
    }

    /// Stops accepting, shuts every open connection down (an upload in flight keeps its durable
    /// prefix), and waits until every connection thread has finished, and the expiry sweep (after
    /// the pass it may be in). Safe to call more than once.
    public func stop() {
        let wakeWrite = state.withLock { state -> Int32? in
            guard !state.stopping else { return nil }
            state.stopping = true
            for fd in state.connections { Syscalls.shutdownBoth(fd) }
            return state.wakeWrite
        }
        if let wakeWrite { Syscalls.poke(wakeWrite) }
        threads.wait()
        state.withLock { state in
            for fd in [state.listener, state.wakeRead, state.wakeWrite].compactMap({ $0 }) { Syscalls.closeDescriptor(fd) }
            state.listener = nil
            state.wakeRead = nil
            state.wakeWrite = nil
        }
    }

    private func acceptLoop(listener: Int32, wake: Int32, handler: RequestHandler) {
        while true {
            let ready: [Int]
            do {
                ready = try Syscalls.waitReadable([listener, wake], timeoutMilliseconds: -1)
            } catch {
                configuration.log("accept loop stopped: \(error)")
                return
            }
            if ready.contains(1) || state.withLock({ $0.stopping }) { return }
            let fd: Int32
            let peer: String
            do {
                (fd, peer) = try Syscalls.accept(listener, sendTimeoutSeconds: configuration.ioTimeout)
            } catch {
                // ECONNABORTED and friends concern one client; EMFILE needs a pause to clear.
                if error.systemErrno == EMFILE || error.systemErrno == ENFILE {
                    configuration.log("accept failed: \(error.message)")
                    Syscalls.sleep(milliseconds: 50)
                }
                continue
            }
            // When every slot is taken, the connection that has waited longest for a request
            // head makes room: idle connections (a slowloris opening hundreds and sending
            // nothing, or a trickle of header bytes), and peers being refused without the token,
            // must not lock real clients out until they time out. Connections with an authorised
            // request in progress are never evicted.
            var evictedFor: Int32?
            let admitted = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                if state.connections.count - state.evicted.count >= configuration.maxConnections {
                    guard let oldest = state.evictable.min(by: { $0.value < $1.value })?.key else { return false }
                    Syscalls.shutdownBoth(oldest)
                    state.evictable[oldest] = nil
                    state.evicted.insert(oldest)
                    evictedFor = oldest
                }
                state.connections.insert(fd)
                return true
            }
            if evictedFor != nil { configuration.log("- - evicted the connection idle longest for a new one") }
            guard admitted else {
                let connection = HTTPConnection(descriptor: fd, peer: peer, configuration: configuration)
                connection.send(.text(503, "too many connections", headers: [("Retry-After", "1")]), close: true)
                configuration.log("- - 503 too many connections")
                continue
            }
            threads.enter()
            Thread.detachNewThread { [self] in
                serve(fd, peer: peer, handler: handler)
                threads.leave()
            }
        }
    }

    private func serve(_ fd: Int32, peer: String, handler: RequestHandler) {
        var connection: HTTPConnection? = HTTPConnection(descriptor: fd, peer: peer, configuration: configuration)
        connection?.evictable = { [self] evictable in
            state.withLock { state in
                guard !state.evicted.contains(fd) else { return }
                state.evictable[fd] = evictable ? ContinuousClock.now : nil
            }
        }
        while let current = connection {
            switch current.readHead() {
            case .closed:
                connection = nil
            case .refused(let error):
                // The client may still be sending the rest of its head: let the answer reach it.
                if current.send(.text(error.status, error.reason), close: true) { current.lingerBeforeClose() }
                handler.logRefused(error)
                connection = nil
            case .head(let head):
                if !handler.handle(head, on: current) || state.withLock({ $0.stopping }) { connection = nil }
            }
            if connection == nil {
                // Forget the descriptor before it is closed, so stop() never shuts a reused number.
                state.withLock { state in
                    state.connections.remove(fd)
                    state.evictable[fd] = nil
                    state.evicted.remove(fd)
                }
            }
        }
    }
}
