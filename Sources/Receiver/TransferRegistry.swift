import Dispatch
import Synchronization

/// At most one transfer per upload resource. A request on an upload (HEAD, PATCH, DELETE) first
/// acquires the upload's slot; if an older request holds it, its connection is shut down, which
/// ends its body early, and the newer request waits until the older one has written (and
/// checkpointed) its prefix and released the slot. So the offset a newer request sees is never stale.
final class TransferRegistry: Sendable {
    private struct Slot: Sendable {
        let gate = DispatchSemaphore(value: 1)
        /// The connection currently holding the slot.
        var holder: Int32?
        /// Requests holding or waiting for the slot.
        var users = 0
    }

    private let slots = Mutex<[String: Slot]>([:])

    /// Takes the slot for `id` on behalf of the connection `descriptor`, ending an older holder.
    /// False when the older holder did not let go within `timeout` seconds.
    func acquire(_ id: String, descriptor: Int32, timeout: Double) -> Bool {
        let gate = slots.withLock { slots -> DispatchSemaphore in
            var slot = slots[id] ?? Slot()
            slot.users += 1
            if let holder = slot.holder { Syscalls.shutdownBoth(holder) }
            slots[id] = slot
            return slot.gate
        }
        if gate.wait(timeout: .now() + timeout) == .timedOut {
            slots.withLock { slots in
                slots[id]?.users -= 1
                if slots[id]?.users == 0 { slots[id] = nil }
            }
            return false
        }
        slots.withLock { slots in slots[id]?.holder = descriptor }
        return true
    }

    /// Gives the slot back; the next waiter (if any) gets it.
    func release(_ id: String) {
        slots.withLock { slots in
            guard var slot = slots[id] else { return }
            slot.holder = nil
            slot.users -= 1
            slot.gate.signal()
            slots[id] = slot.users == 0 ? nil : slot
        }
    }

    /// Takes the slot for `id` only if nobody holds or waits for it (the expiry sweep uses this so
    /// it never removes an upload a request is about to use). Pair with `release(_:)`.
    func acquireIfIdle(_ id: String) -> Bool {
        slots.withLock { slots -> Bool in
            guard slots[id] == nil else { return false }
            var slot = Slot()
            slot.users = 1
            slot.gate.wait()  // the gate starts open: close it, as acquire() would
            slots[id] = slot
            return true
        }
    }
}
