import Synchronization
import Transfer

/// Collects checkpoints (and what the server had received when each was saved) from the
/// uploader's callback, which may run on any thread.
final class CheckpointLog: Sendable {
    private let entries = Mutex<[(checkpoint: UploadCheckpoint, serverBodyBytes: Int, requestsSeen: Int)]>([])
    private let server: FakeResumableServer

    init(server: FakeResumableServer) { self.server = server }

    /// The callback to pass to `upload`.
    func record(_ checkpoint: UploadCheckpoint) {
        let bytes = server.bodyBytesReceived
        let seen = server.requests.count
        entries.withLock { $0.append((checkpoint, bytes, seen)) }
    }

    var all: [(checkpoint: UploadCheckpoint, serverBodyBytes: Int, requestsSeen: Int)] { entries.withLock { $0 } }
}
