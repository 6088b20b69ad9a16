import Synchronization

/// A one-way flag a Swift task sets and a transfer thread polls from libcurl's progress callback.
public final class CancellationFlag: Sendable {
    private let state = Atomic<Bool>(false)

    /// Creates an unset flag.
    public init() {}

    /// Asks the transfer to stop at its next progress callback.
    public func cancel() { state.store(true, ordering: .releasing) }

    /// True once `cancel()` was called.
    public var isCancelled: Bool { state.load(ordering: .acquiring) }
}
