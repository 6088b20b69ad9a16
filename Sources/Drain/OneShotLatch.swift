import Synchronization

/// Completes exactly once. The normal finish and a signal handler both funnel through `complete`;
/// whichever comes first wins and the other is a no-op.
public final class OneShotLatch<Value: Sendable>: Sendable {
    private let state = Mutex<Value?>(nil)

    public init() {}

    /// Records `value` if nothing was recorded yet. Returns true for the call that won.
    @discardableResult
    public func complete(_ value: Value) -> Bool {
        state.withLock { current in
            guard current == nil else { return false }
            current = value
            return true
        }
    }

    /// The recorded value, or nil while open.
    public var value: Value? { state.withLock { $0 } }

    public var isCompleted: Bool { value != nil }
}
