#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Turns SIGINT and SIGTERM into a callback on a private queue, instead of the default of dying
/// mid-write. Keep the watcher alive while it should watch; `cancel` restores the defaults.
public final class SignalWatcher: @unchecked Sendable {
    // The sources are created and cancelled only by init and cancel, never concurrently.
    private var sources: [any DispatchSourceSignal] = []
    private let signals: [Int32]

    /// Calls `handler` with the signal number each time one of `signals` arrives.
    public init(signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        self.signals = signals
        let queue = DispatchQueue(label: "photodrain.signals")
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            sources.append(source)
        }
    }

    /// Stops watching and restores the default actions.
    public func cancel() {
        for source in sources { source.cancel() }
        sources.removeAll()
        for number in signals { signal(number, SIG_DFL) }
    }

    deinit { cancel() }

    /// The signal's name, for messages.
    public static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}
