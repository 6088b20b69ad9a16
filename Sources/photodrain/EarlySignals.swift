import Drain
import Synchronization

/// Watches SIGINT/SIGTERM from the start of a command, before its runner exists: a signal that
/// arrives while the cascade, model or store are still loading is remembered and handed to the
/// runner as soon as it is attached, so the command still stops cleanly with "work remains".
final class EarlySignals: Sendable {
    private final class Shared: Sendable {
        let state = Mutex<(signal: Int32?, stop: (@Sendable (Int32) -> Void)?)>((nil, nil))
    }

    private let shared = Shared()
    private let watcher: SignalWatcher

    init() {
        let shared = self.shared
        watcher = SignalWatcher { number in
            let stop = shared.state.withLock { current -> (@Sendable (Int32) -> Void)? in
                if current.signal == nil { current.signal = number }
                return current.stop
            }
            stop?(number)
        }
    }

    /// Routes signals to `stop` from now on, delivering one that already arrived.
    func attach(_ stop: @escaping @Sendable (Int32) -> Void) {
        let early = shared.state.withLock { current -> Int32? in
            current.stop = stop
            return current.signal
        }
        if let early { stop(early) }
    }

    /// Restores the default signal actions.
    func cancel() { watcher.cancel() }
}
