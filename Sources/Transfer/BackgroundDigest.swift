import Foundation
import Synchronization

/// The SHA-256 of a file, computed on a thread of its own from the moment this is created, so the
/// hashing overlaps other work (typically the upload of the file before it). Hashing is blocking
/// file I/O, so it never runs on the cooperative pool.
///
/// ```swift
/// let next = BackgroundDigest(path: nextFile)          // starts hashing now
/// ...                                                  // upload the current file meanwhile
/// let metadata = UploadMetadata(file: nextFile, sha256Hex: try await next.sha256Hex())
/// ```
public final class BackgroundDigest: Sendable {
    private typealias Outcome = Result<String, TransferError>

    private enum State {
        case running(waiters: [CheckedContinuation<Outcome, Never>])
        case finished(Outcome)
    }

    private let state = Mutex<State>(.running(waiters: []))

    /// Starts hashing the file at `path`.
    public convenience init(path: String) {
        self.init { () throws(TransferError) -> String in try FileDigest.sha256Hex(path: path) }
    }

    /// Starts `compute` (which returns 64 hex digits) on a thread of its own; tests pass one that
    /// waits for a signal, to decide when the digest becomes known.
    init(computing compute: @escaping @Sendable () throws(TransferError) -> String) {
        let thread = Thread { [self] in
            let outcome: Outcome
            do throws(TransferError) {
                outcome = .success(try compute())
            } catch {
                outcome = .failure(error)
            }
            let waiters = state.withLock { state -> [CheckedContinuation<Outcome, Never>] in
                guard case .running(let waiters) = state else { return [] }
                state = .finished(outcome)
                return waiters
            }
            for waiter in waiters { waiter.resume(returning: outcome) }
        }
        thread.name = "photodrain-digest"
        thread.start()
    }

    /// The digest as 64 lowercase hex digits if the hashing has finished, else nil (never waits).
    /// Throws `TransferError` (`file-unreadable`) when the file could not be read.
    public func sha256HexIfFinished() throws(TransferError) -> String? {
        let outcome = state.withLock { state -> Outcome? in
            if case .finished(let outcome) = state { return outcome }
            return nil
        }
        return try outcome?.get()
    }

    /// The digest as 64 lowercase hex digits, waiting for the hashing to finish. Throws
    /// `TransferError` (`file-unreadable`) when the file could not be read.
    public func sha256Hex() async throws(TransferError) -> String {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let ready = state.withLock { state -> Outcome? in
                switch state {
                case .finished(let outcome):
                    return outcome
                case .running(var waiters):
                    waiters.append(continuation)
                    state = .running(waiters: waiters)
                    return nil
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
        return try outcome.get()
    }
}
