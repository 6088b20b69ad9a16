import Foundation
import Synchronization

/// Failed authentications counted per peer address: past `ReceiverConfiguration.failedAuthLimit`
/// in a burst (forgiven at that many per `failedAuthWindow`), the address's requests without a
/// valid token are answered `429` rather than `401`.
///
/// Each address has a leaky bucket: a failure adds one, and the level drains by `limit` per
/// `window`. A failure that finds the level at `limit` is not counted; the request is refused
/// `429` instead, with the seconds until the next failure would be counted. Only requests without
/// a valid token ever look here: a valid token is served whatever its address's bucket holds, so
/// a good client behind the same NAT as a misbehaving one is never locked out. That also means a
/// right guess from a refused address is still served: the limit tells a peer that keeps failing
/// (a device with a revoked or mistyped token, a scanner) to stop, with `Retry-After`, and marks
/// it in the log; what makes guessing hopeless is a device token's 256 random bits (a
/// `--token-file` token is only as strong as its text). The table keeps at most `maxPeers`
/// addresses; when full, the one whose bucket has drained most is forgotten.
final class FailedAuthLimiter: Sendable {
    private struct Bucket {
        var level: Double
        var updated: Date
    }

    /// The most addresses remembered at once.
    static let maxPeers = 4_096

    let limit: Int
    let window: Double
    private let now: @Sendable () -> Date
    private let buckets = Mutex<[String: Bucket]>([:])

    init(limit: Int, window: Double, now: @escaping @Sendable () -> Date) {
        self.limit = limit
        self.window = window
        self.now = now
    }

    /// Failures forgiven per second.
    private var rate: Double { Double(limit) / window }

    /// What became of a failed authentication.
    enum Verdict: Equatable {
        /// Counted: answer `401`. `full` when the peer's next failure, now, would be refused.
        case counted(full: Bool)
        /// Over the limit, not counted: answer `429`, the peer may fail again in this many seconds
        /// (at least 1).
        case refused(retryAfter: Int)
    }

    /// Counts one failed authentication of `peer`, or refuses it when the peer's bucket is full.
    func fail(peer: String) -> Verdict {
        let date = now()
        let limit = Double(self.limit)
        return buckets.withLock { buckets -> Verdict in
            let level = buckets[peer].map { drained($0, at: date) } ?? 0
            if level + 1 > limit {
                return .refused(retryAfter: max(1, Int(((level + 1 - limit) / rate).rounded(.up))))
            }
            if buckets[peer] == nil && buckets.count >= Self.maxPeers,
               let emptiest = buckets.min(by: { drained($0.value, at: date) < drained($1.value, at: date) }) {
                buckets[emptiest.key] = nil
            }
            buckets[peer] = Bucket(level: level + 1, updated: date)
            return .counted(full: level + 2 > limit)
        }
    }

    /// The bucket's level at `date`, drained since it was last raised (a clock set back drains nothing).
    private func drained(_ bucket: Bucket, at date: Date) -> Double {
        max(0, bucket.level - max(0, date.timeIntervalSince(bucket.updated)) * rate)
    }
}
