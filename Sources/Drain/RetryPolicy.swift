import AssetStore
import UploadProtocol

/// How an upload attempt ended, as the retry policy sees it.
public enum UploadOutcome: Sendable, Equatable {
    /// The server acknowledged the photo durably.
    case succeeded(serverID: String?)
    /// Timeouts, a lost connection, 408/429/5xx: worth another try later.
    case transient(message: String)
    /// 400/401/403/413 and other 4xx, a bad server response: no retry without a new destination.
    case permanent(message: String)
    /// Blocked by policy (destination offline, runner terminating): no attempt is charged.
    case deferred(reason: String)
}

/// What to do with the photo's row after an attempt.
public enum RetryDecision: Sendable, Equatable {
    /// Record the upload (uploaded_at, server id).
    case markUploaded(serverID: String?)
    /// Count the failure; the photo rotates to the back by its last attempt and is tried again.
    case retryLater(attempts: Int, message: String)
    /// Give up: the photo is failed with this reason.
    case markFailed(attempts: Int, message: String)
    /// Leave the row as it was before the attempt; charge nothing.
    case leavePending
}

/// Rotate, then give up: transient failures count and rotate the photo to the back of the queue;
/// after `maxAttempts` counted failures it is failed. Permanent failures fail it at once;
/// deferrals are free.
public struct RetryPolicy: Sendable, Equatable {
    public var maxAttempts: Int

    /// Counted failures before a photo is failed, unless told otherwise.
    public static let defaultMaxAttempts = 5

    public init(maxAttempts: Int = RetryPolicy.defaultMaxAttempts) { self.maxAttempts = max(1, maxAttempts) }

    /// The decision for a photo that had `attempts` counted failures before this outcome.
    public func decide(_ outcome: UploadOutcome, previousAttempts attempts: Int) -> RetryDecision {
        switch outcome {
        case .succeeded(let id):
            return .markUploaded(serverID: id)
        case .transient(let message):
            let now = attempts + 1
            return now >= maxAttempts ? .markFailed(attempts: now, message: message) : .retryLater(attempts: now, message: message)
        case .permanent(let message):
            return .markFailed(attempts: attempts + 1, message: message)
        case .deferred:
            return .leavePending
        }
    }
}

extension RetryPolicy {
    /// The row update for a finished job: success records the server id; a failure counts, and
    /// fails the photo when permanent or at the retry limit.
    public func update(for job: UploadJob, asset: AssetRecord?) -> AssetStore.AssetUpdate {
        let previous = asset?.attempts ?? 0
        let outcome: UploadOutcome
        switch job.state {
        case .succeeded:
            outcome = .succeeded(serverID: job.serverID)
        case .failed:
            let failure = job.failure
            let message = failure.map { "\($0.code): \($0.message)" } ?? "failed without a reason"
            outcome = failure?.transient == true ? .transient(message: message) : .permanent(message: message)
        default:
            outcome = .deferred(reason: "job not finished")
        }
        let update = rowUpdate(decide(outcome, previousAttempts: previous))
        if case .uploaded(let id, _) = update, let proof = job.proof { return .uploaded(serverID: id, proof: proof) }
        return update
    }

    /// True when a failed job should be retried rather than acknowledged: a transient error with
    /// attempts left after counting this one.
    public func shouldRetry(_ job: UploadJob, asset: AssetRecord?) -> Bool {
        guard job.state == .failed, job.failure?.transient == true, let asset else { return false }
        return asset.attempts + 1 < maxAttempts
    }

    /// The row update for a decision.
    public func rowUpdate(_ decision: RetryDecision) -> AssetStore.AssetUpdate {
        switch decision {
        case .markUploaded(let id): .uploaded(serverID: id)
        case .retryLater(let attempts, let message): .failure(attempts: attempts, message: message, terminal: false)
        case .markFailed(let attempts, let message): .failure(attempts: attempts, message: message, terminal: true)
        case .leavePending: .unchanged
        }
    }
}
