import Foundation
import Synchronization

/// The threads `onOwnThread` started that are still running. A cancelled caller stops waiting for
/// its thread, but the process must not exit under it: `exit()` runs the C libraries' exit
/// handlers (libcrypto, libheif's codecs) while the thread may still be inside them.
public enum OwnThreads {
    private static let running = Mutex(0)

    fileprivate static func started() { running.withLock { $0 += 1 } }
    fileprivate static func finished() { running.withLock { $0 -= 1 } }

    /// How many are running now.
    public static var count: Int { running.withLock { $0 } }

    /// Waits until none is running, at most `limit` (the stop rule's `StopGrace.beforeExit`).
    public static func waitForAll(limit: Duration = StopGrace.beforeExit) async {
        let deadline = ContinuousClock.now + limit
        while count > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// Runs blocking work (decoding, SQLite queries, folder walks, a server's accept loop) on a
/// thread of its own (`BlockingPool`'s), never on Swift's cooperative pool, and resumes the caller when it is done:
/// the project's one bridge between async code and blocking work. If the calling task is cancelled
/// first, the caller resumes at once with nil and the thread's result is dropped: a stopping
/// runner does not wait for an analysis it will not use (the work is redone by the next run).
/// `OwnThreads.waitForAll()` lets the process wait for such threads before it exits. `pool`: whose
/// threads (a runner keeps its analyses on a few threads of their own, see `DrainRunner`).
public func onOwnThread<T: Sendable>(_ name: String, on pool: BlockingPool = .shared, _ work: @escaping @Sendable () -> T) async -> T? {
    let state = Mutex(OwnThreadState<T>())
    /// Takes the continuation exactly once: whoever finishes first resumes it.
    @Sendable func take() -> CheckedContinuation<T?, Never>? {
        state.withLock { s in
            guard !s.finished, let continuation = s.continuation else { return nil }
            s.finished = true
            s.continuation = nil
            return continuation
        }
    }
    return await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let cancelledAlready = state.withLock { s -> Bool in
                s.continuation = continuation
                return s.cancelled
            }
            if cancelledAlready {
                take()?.resume(returning: nil)
                return
            }
            OwnThreads.started()
            // The caller is resumed once the thread counts as free again: a caller that asks at
            // once (a runner's next analysis) gets this thread, not a new one.
            pool.runThenHandOver(name, {
                let result = work()
                return {
                    take()?.resume(returning: result)
                    OwnThreads.finished()
                }
            })
        }
    } onCancel: {
        state.withLock { $0.cancelled = true }
        take()?.resume(returning: nil)
    }
}

/// Who resumes `onOwnThread`'s caller: the finished thread or a cancellation, whichever is first.
private struct OwnThreadState<T: Sendable> {
    var continuation: CheckedContinuation<T?, Never>?
    var finished = false
    var cancelled = false
}

/// As `onOwnThread`, but the caller waits for the work whatever happens: for work that must not
/// be abandoned halfway (recording an upload's outcome in the store, a command's whole run).
public func onOwnThreadUntilDone<T: Sendable>(_ name: String, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        OwnThreads.started()
        BlockingPool.shared.runThenHandOver(name, {
            let result = work()
            return {
                continuation.resume(returning: result)
                OwnThreads.finished()
            }
        })
    }
}

/// The threads blocking work runs on: one per piece of work in flight, reused. A piece goes to an
/// idle thread when there is one, else to a new thread; a thread left idle waits for the next
/// piece, and ends after `linger` idle once more than `keep` threads are idle. So a loop that asks
/// the store every few milliseconds (drain's count, a claim, a record) reuses a handful of
/// threads instead of starting one per call.
///
/// Not a fixed number of threads, as swift-nio's `NIOThreadPool` has: here some pieces block for
/// minutes (a transfer, `serve`'s accept loop, a whole `analyze` run), and a fixed pool would
/// queue a stopping loop's store query behind them, or deadlock when every thread waits on work
/// still queued. The pool bounds what it keeps, not what runs: that is bounded by the callers
/// (the slots, the transfers in flight).
public final class BlockingPool: @unchecked Sendable {
    /// The process's pool.
    public static let shared = BlockingPool(keep: 8, linger: 10)

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var queue: [(name: String, work: @Sendable () -> @Sendable () -> Void)] = []
    private var head = 0
    private var idle = 0
    /// Threads done with a piece that are handing its result over: free, and they look at the
    /// queue before they wait, so they count as idle for a piece that arrives meanwhile.
    private var handingOver = 0
    private var threads = 0
    private var started = 0
    private let keep: Int
    private let linger: TimeInterval

    /// `keep`: idle threads kept past `linger` seconds.
    public init(keep: Int, linger: TimeInterval) {
        self.keep = keep
        self.linger = linger
    }

    /// Threads alive now, and how many were ever started (for tests and the curious).
    public var threadCounts: (alive: Int, started: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (threads, started)
    }

    /// Runs `work` on one of the pool's threads, named `name` while it runs.
    public func run(_ name: String, _ work: @escaping @Sendable () -> Void) {
        runThenHandOver(name, {
            work()
            return {}
        })
    }

    /// Runs `work` on one of the pool's threads, named `name` while it runs, then the hand-over
    /// `work` returns (resuming whoever waits for its result) once the thread counts as free. A
    /// caller resumed inside `work` that asked again at once would find the thread still busy and
    /// start another: a runner's analyses rotated over three threads with two slots, and the
    /// allocator kept a heap of decoded pixels for each (BENCHMARKS.md "One runner").
    public func runThenHandOver(_ name: String, _ work: @escaping @Sendable () -> @Sendable () -> Void) {
        condition.lock()
        queue.append((name, work))
        let waiting = queue.count - head
        if idle + handingOver >= waiting {
            condition.signal()
            condition.unlock()
            return
        }
        threads += 1
        started += 1
        condition.unlock()
        let thread = Thread { [self] in serve() }
        thread.name = name
        thread.start()
    }

    private func serve() {
        condition.lock()
        while true {
            while head == queue.count {
                idle += 1
                let signalled = condition.wait(until: Date(timeIntervalSinceNow: linger))
                idle -= 1
                if !signalled && head == queue.count && idle >= keep {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            let (name, work) = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            }
            condition.unlock()
            Thread.current.name = name
            let handOver = work()
            condition.lock()
            handingOver += 1
            condition.unlock()
            handOver()
            condition.lock()
            handingOver -= 1
        }
    }
}
