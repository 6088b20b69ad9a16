/// Says "an agent is performing this store's jobs" for as long as it lives: it holds a shared
/// flock(2) on a file beside the database (`<store>.agent`), which the kernel drops when the agent
/// exits or is killed, so a dead agent never looks alive. `wake` asks `isAgentRunning()` before it
/// promises progress on jobs it cannot perform itself.
public final class AgentPresence: Sendable {
    private let descriptor: Int32

    /// Announces an agent on `store`. Throws `cannotOpen` when the lock file cannot be created.
    public init(store: AssetStore) throws(StoreError) {
        guard let path = store.agentLockPath else {
            throw StoreError(.cannotOpen, "an in-memory store has no agent")
        }
        descriptor = try FileTree.lockShared(path).get()
    }

    deinit { FileTree.closeDescriptor(descriptor) }
}

extension AssetStore {
    /// The lock file agents hold while they run; nil for an in-memory store.
    var agentLockPath: String? { path == ":memory:" ? nil : path + ".agent" }

    /// True while an agent (an `AgentPresence`, in any process) runs on this store.
    public func isAgentRunning() -> Bool {
        agentLockPath.map(FileTree.isLockHeld) ?? false
    }
}
