import Synchronization

/// The hashing threads of `BackgroundDigest`s that are still running, so a process can end them
/// before it exits. `exit()` runs libcrypto's exit handlers, which free what a hashing thread may
/// still be using: `photodrain upload` crashed (SIGSEGV) in about 3 % of runs whose first file
/// failed fast while the next file was being hashed. `photodrain` calls
/// `DigestThreads.shared.stopAll()` before it exits.
public final class DigestThreads: Sendable {
    private struct State {
        var running: [ObjectIdentifier: CancellationFlag] = [:]
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The threads of every digest created without naming another set.
    public static let shared = DigestThreads()

    private let state = Mutex<State>(State())

    /// Creates an empty set (tests use their own, so they do not stop other tests' digests).
    public init() {}

    /// The number of hashing threads still running.
    public var runningCount: Int { state.withLock { $0.running.count } }

    /// Asks every running digest to stop (each ends within one chunk of its file; its waiters see
    /// `cancelled`) and returns once no hashing thread is running.
    public func stopAll() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                for flag in state.running.values { flag.cancel() }
                if state.running.isEmpty { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Records a thread that is about to start; `stop` is the flag its hashing polls.
    func register(_ stop: CancellationFlag) {
        state.withLock { $0.running[ObjectIdentifier(stop)] = stop }
    }

    /// Records that the thread hashing for `stop` has finished with libcrypto.
    func deregister(_ stop: CancellationFlag) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.running[ObjectIdentifier(stop)] = nil
            guard state.running.isEmpty else { return [] }
            defer { state.idleWaiters = [] }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
