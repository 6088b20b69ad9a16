#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Faults a receiver injects on purpose, so clients (and the receiver's own tests) can be tested
/// under interruption without a proxy:
///
/// - `cutAtOffsets`: when the bytes of a request body reach one of these upload offsets (the
///   position in the upload for resumable requests, in the body for plain ones), the receiver
///   keeps the bytes before it and drops the connection, as if the network had failed. Each offset
///   fires once.
/// - `diskFullAfterBytes`: after this many body bytes in total have been written, every further
///   write fails as ENOSPC would.
public final class FaultInjection: Sendable {
    private struct State {
        var cuts: [Int64]
        var budget: Int64?
        var fired: Int = 0
    }

    private let state: Mutex<State>

    /// Injects the given faults.
    public init(cutAtOffsets: [Int64] = [], diskFullAfterBytes: Int64? = nil) {
        state = Mutex(State(cuts: cutAtOffsets.sorted(), budget: diskFullAfterBytes))
    }

    /// How many cuts and disk-full failures have fired so far.
    public var firedCount: Int { state.withLock { $0.fired } }

    /// What may happen to a piece of body bytes.
    struct Admission {
        /// How many leading bytes to write.
        var allowed: Int
        /// Drop the connection after writing them.
        var cut = false
        /// Fail with this (an injected ENOSPC) after writing them.
        var failure: ReceiverError?
    }

    /// What becomes of `count` body bytes arriving at upload offset `offset`.
    func admit(_ count: Int, at offset: Int64) -> Admission {
        state.withLock { state -> Admission in
            var admission = Admission(allowed: count)
            if let index = state.cuts.firstIndex(where: { $0 >= offset && $0 < offset + Int64(count) }) {
                admission.allowed = Int(state.cuts[index] - offset)
                admission.cut = true
                state.cuts.remove(at: index)
                state.fired += 1
            }
            if let budget = state.budget, budget < Int64(admission.allowed) {
                // Like a real disk: the write fills what space is left, then fails.
                admission.allowed = Int(budget)
                admission.cut = false
                admission.failure = ReceiverError(code: .diskFull, message: "write failed: no space left on device (injected)",
                                                  systemErrno: ENOSPC)
                state.fired += 1
            }
            if let budget = state.budget { state.budget = budget - Int64(admission.allowed) }
            return admission
        }
    }
}
