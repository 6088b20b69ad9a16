import Foundation
import SystemSupport
import Synchronization

/// The SHA-256 of a file, computed on a thread of its own, so the hashing overlaps other work
/// (typically the upload of the file before it). Hashing is blocking file I/O, so it never runs on
/// the cooperative pool.
///
/// It starts when created, or with `startingNow: false` when `start()` is called (or when the
/// digest is first awaited, so waiting never stalls). `photodrain upload` starts the next file's
/// digest when the current file's body has been sent: while the server stores that file, the
/// client's cores are idle, whereas hashing while the body streams competes with sending and
/// receiving it on the same cores (measured in BENCHMARKS.md).
///
/// ```swift
/// let next = BackgroundDigest(path: nextFile, startingNow: false)
/// ...                                                  // upload the current file, calling
/// ...                                                  // next.start() once its body is sent
/// let metadata = UploadMetadata(file: nextFile, sha256Hex: try await next.sha256Hex())
/// ```
public final class BackgroundDigest: Sendable {
    private typealias Outcome = Result<String, TransferError>

    private enum State {
        case notStarted
        case running(waiters: [CheckedContinuation<Outcome, Never>])
        case finished(Outcome)
    }

    private let state = Mutex<State>(.notStarted)
    /// The file's MD5, when it was asked for (`withMD5`), set before the digest finishes.
    private let md5Result: MD5Result
    private let stop = CancellationFlag()
    private let threads: DigestThreads
    private let compute: @Sendable (CancellationFlag) throws(TransferError) -> String

    /// Hashes the file at `path`: from now, or from `start()` when `startingNow` is false. The
    /// thread is one of `threads`, whose `stopAll()` ends it early.
    /// With `withMD5`, the same read also gives the file's MD5 (`md5`): what an S3 upload sends
    /// as `Content-MD5` and checks the store's ETag against, computed ahead with the SHA-256.
    public convenience init(path: String, startingNow: Bool = true, withMD5: Bool = false, threads: DigestThreads = .shared) {
        let md5 = MD5Result()
        self.init(startingNow: startingNow, threads: threads, md5Result: md5, stoppable: { (stop) throws(TransferError) -> String in
            guard withMD5 else { return try FileDigest.sha256Hex(path: path, stop: stop) }
            let both = try FileDigest.sha256AndMD5(path: path, stop: stop)
            md5.value.withLock { $0 = both.md5 }
            return SHA256.hex(both.sha256)
        })
    }

    /// Runs `compute` (which returns 64 hex digits) on a thread of its own; tests pass one that
    /// waits for a signal, to decide when the digest becomes known.
    convenience init(startingNow: Bool = true, computing compute: @escaping @Sendable () throws(TransferError) -> String) {
        self.init(startingNow: startingNow, stoppable: { (_: CancellationFlag) throws(TransferError) -> String in try compute() })
    }

    /// Runs `compute` on a thread of its own, passing it the flag `DigestThreads.stopAll()` sets; `compute`
    /// should throw `cancelled` soon after the flag is set.
    init(startingNow: Bool = true, threads: DigestThreads = .shared, md5Result: MD5Result = MD5Result(),
         stoppable compute: @escaping @Sendable (CancellationFlag) throws(TransferError) -> String) {
        self.compute = compute
        self.md5Result = md5Result
        self.threads = threads
        if startingNow { start() }
    }

    /// Starts the hashing if it has not started yet; returns at once. Safe from any thread.
    public func start() {
        let starts = state.withLock { state -> Bool in
            guard case .notStarted = state else { return false }
            state = .running(waiters: [])
            return true
        }
        guard starts else { return }
        threads.register(stop)
        let thread = Thread { [self] in
            let outcome: Outcome
            do throws(TransferError) {
                outcome = .success(try compute(stop))
            } catch {
                outcome = .failure(error)
            }
            let waiters = state.withLock { state -> [CheckedContinuation<Outcome, Never>] in
                guard case .running(let waiters) = state else { return [] }
                state = .finished(outcome)
                return waiters
            }
            for waiter in waiters { waiter.resume(returning: outcome) }
            threads.deregister(stop)
        }
        thread.name = "photodrain-digest"
        thread.start()
    }

    /// The digest as 64 lowercase hex digits if the hashing has finished, else nil (never waits,
    /// never starts it). Throws `TransferError` (`file-unreadable`) when the file could not be read.
    public func sha256HexIfFinished() throws(TransferError) -> String? {
        let outcome = state.withLock { state -> Outcome? in
            if case .finished(let outcome) = state { return outcome }
            return nil
        }
        return try outcome?.get()
    }

    /// The file's MD5 once `sha256Hex()` has returned, when it was made `withMD5`; else nil.
    public var md5: [UInt8]? { md5Result.value.withLock { $0 } }

    /// The digest as 64 lowercase hex digits, starting the hashing if needed and waiting for it.
    /// Throws `TransferError` (`file-unreadable`) when the file could not be read.
    public func sha256Hex() async throws(TransferError) -> String {
        start()
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let ready = state.withLock { state -> Outcome? in
                switch state {
                case .finished(let outcome):
                    return outcome
                case .running(var waiters):
                    waiters.append(continuation)
                    state = .running(waiters: waiters)
                    return nil
                case .notStarted:
                    preconditionFailure("start() leaves the digest running or finished")
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
        return try outcome.get()
    }
}

/// Where a `BackgroundDigest`'s hashing thread leaves the MD5 it computed beside the SHA-256.
final class MD5Result: Sendable {
    let value = Mutex<[UInt8]?>(nil)
}
