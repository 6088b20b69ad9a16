import Synchronization
import SystemSupport

/// The running SHA-256 of partial uploads between their appends, so an upload sent in several
/// requests is hashed as its bytes arrive instead of read back whole at completion. Memory only:
/// after a restart, or for an upload not seen from its first byte, the digest is computed from the
/// file as before. At most `capacity` uploads are kept (the oldest is forgotten first).
final class PartialDigests: Sendable {
    private struct Entry {
        let hasher: SHA256
        /// The bytes hashed: the digest can continue only an append that starts here.
        let length: Int64
    }

    private struct Table {
        var entries: [String: Entry] = [:]
        var order: [String] = []
    }

    private let capacity: Int
    private let table = Mutex(Table())

    init(capacity: Int = 256) {
        self.capacity = max(1, capacity)
    }

    /// Takes the running digest of upload `id` if it covers exactly its first `length` bytes.
    func take(_ id: String, continuingAt length: Int64) -> SHA256? {
        let entry = table.withLock { table -> Entry? in
            guard let entry = table.entries.removeValue(forKey: id) else { return nil }
            table.order.removeAll { $0 == id }
            return entry
        }
        guard let entry, entry.length == length else { return nil }
        return entry.hasher
    }

    /// Keeps the running digest of upload `id` over its first `length` bytes for its next append.
    func keep(_ id: String, hasher: SHA256, length: Int64) {
        table.withLock { table in
            if table.entries.updateValue(Entry(hasher: hasher, length: length), forKey: id) == nil {
                table.order.append(id)
            }
            while table.order.count > capacity {
                table.entries[table.order.removeFirst()] = nil
            }
        }
    }

    /// Forgets upload `id` (completed, cancelled or failed).
    func forget(_ id: String) {
        table.withLock { table in
            if table.entries.removeValue(forKey: id) != nil { table.order.removeAll { $0 == id } }
        }
    }
}
