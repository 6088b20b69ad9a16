import Foundation
import Synchronization

/// Runs blocking work (decoding, SQLite waits) on a thread of its own, never on Swift's
/// cooperative pool, and resumes the caller when it is done. If the calling task is cancelled
/// first, the caller resumes at once with nil and the thread's result is dropped: a stopping
/// runner does not wait for an analysis it will not use (the work is redone by the next run).
func onOwnThread<T: Sendable>(_ name: String, _ work: @escaping @Sendable () -> T) async -> T? {
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
            let thread = Thread {
                let result = work()
                take()?.resume(returning: result)
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
