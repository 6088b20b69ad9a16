import Foundation

/// Runs blocking work (decoding, SQLite waits) on a thread of its own, never on Swift's
/// cooperative pool, and resumes the caller when it is done.
func onOwnThread<T: Sendable>(_ name: String, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.name = name
        thread.start()
    }
}
