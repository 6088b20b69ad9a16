import Synchronization

/// Scanners kept between `detect` calls on one cascade, so each call reuses the buffers of an
/// earlier one (level pixels, integral tables, offsets) instead of allocating megabytes and
/// faulting them in again for every picture. Any number of calls may run at once: each takes
/// its own scanner (a new one when none is idle) and gives it back when done.
final class ScannerPool: Sendable {
    private let idle = Mutex<[CascadeScanner]>([])
    /// Idle scanners kept at most; more concurrent callers simply build their own.
    private let capacity = 8

    init() {}

    /// An idle scanner, or nil when every one is in use.
    func take() -> CascadeScanner? {
        idle.withLock { $0.popLast() }
    }

    /// Returns `scanner` for a later call (dropped when `capacity` scanners are already idle).
    func giveBack(_ scanner: CascadeScanner) {
        idle.withLock { scanners in
            if scanners.count < capacity { scanners.append(scanner) }
        }
    }
}
