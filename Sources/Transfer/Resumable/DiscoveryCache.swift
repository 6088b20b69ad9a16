import Synchronization

/// Discovery answers per origin, each kept until its expiry. Shared by the uploads of one
/// process (pass one cache to several uploaders to share it further).
public final class DiscoveryCache: Sendable {
    private struct Entry {
        var capability: UploadCapability
        var expires: ContinuousClock.Instant
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// Creates an empty cache.
    public init() {}

    /// The cached answer for `origin`, unless it expired by `now`.
    public func capability(for origin: String, now: ContinuousClock.Instant = .now) -> UploadCapability? {
        entries.withLock { entries in
            guard let entry = entries[origin] else { return nil }
            if entry.expires <= now {
                entries[origin] = nil
                return nil
            }
            return entry.capability
        }
    }

    /// Remembers an answer for `origin` for `lifetime` from `now`.
    public func store(_ capability: UploadCapability, for origin: String, lifetime: Duration,
                      now: ContinuousClock.Instant = .now) {
        entries.withLock { $0[origin] = Entry(capability: capability, expires: now + lifetime) }
    }

    /// Forgets every answer (e.g. after a destination changed its software).
    public func removeAll() {
        entries.withLock { $0.removeAll() }
    }
}
