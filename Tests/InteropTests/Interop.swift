import Synchronization
import Transfer
import UploadProtocol

/// Shared pieces of the interop tests.
enum Interop {
    /// The client's default threshold between optimistic (whole body) and careful (empty first)
    /// creation; the tests use sizes on both sides of it.
    static let optimisticLimit = UploadConfiguration(endpoint: "http://127.0.0.1/uploads").optimisticCreationLimit

    /// Sizes below, at and above the optimistic-creation threshold (and an empty file).
    static let sizes: [Int] = [0, 100_000, Int(optimisticLimit), Int(optimisticLimit) + 1, 9 << 20]

    /// An uploader with the client's defaults except, unless told otherwise, a short pause before
    /// resuming, so tests with several interruptions stay quick.
    static func uploader(to endpoint: String, interopVersion: Int = ResumableUpload.defaultInteropVersion,
                         token: String? = nil, resumeBackoff: Duration = .milliseconds(20),
                         discoveryCache: DiscoveryCache = DiscoveryCache(), acceptUnverified: Bool = false) -> ResumableUploader {
        ResumableUploader(configuration: UploadConfiguration(
            endpoint: endpoint, interopVersion: interopVersion, token: token.flatMap { BearerToken($0) },
            resumeBackoff: resumeBackoff, acceptUnverified: acceptUnverified), discoveryCache: discoveryCache)
    }

    /// Waits (polling) until `condition` holds; false when `seconds` passed first. A guard against
    /// a hung test, not a timing assertion.
    static func wait(upTo seconds: Int = 60, until condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}

/// Records what the client reports while it uploads: checkpoints (upload URL and offset) and
/// acknowledged progress.
final class UploadLog: Sendable {
    private let stored = Mutex<(checkpoints: [UploadCheckpoint], progress: [Int64])>(([], []))

    var checkpoints: [UploadCheckpoint] { stored.withLock { $0.checkpoints } }
    var acknowledged: [Int64] { stored.withLock { $0.progress } }

    func checkpoint(_ checkpoint: UploadCheckpoint) { stored.withLock { $0.checkpoints.append(checkpoint) } }
    func progress(_ progress: UploadProgress) { stored.withLock { $0.progress.append(progress.acknowledgedBytes) } }
}
