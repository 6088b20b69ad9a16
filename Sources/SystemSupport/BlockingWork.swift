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

    /// Waits until none is running, at most `limit` (an analysis takes well under a second).
    public static func waitForAll(limit: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + limit
        while count > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// Runs blocking work (decoding, SQLite queries, folder walks, a server's accept loop) on a
/// thread of its own, never on Swift's cooperative pool, and resumes the caller when it is done:
/// the project's one bridge between async code and blocking work. If the calling task is cancelled
/// first, the caller resumes at once with nil and the thread's result is dropped: a stopping
/// runner does not wait for an analysis it will not use (the work is redone by the next run).
/// `OwnThreads.waitForAll()` lets the process wait for such threads before it exits.
public func onOwnThread<T: Sendable>(_ name: String, _ work: @escaping @Sendable () -> T) async -> T? {
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
            let thread = Thread {
                let result = work()
                take()?.resume(returning: result)
                OwnThreads.finished()
            }
            thread.name = name
            thread.start()
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
        let thread = Thread {
            continuation.resume(returning: work())
            OwnThreads.finished()
        }
        thread.name = name
        thread.start()
    }
}
