import AssetStore
import Transfer

/// Tells a destination that is away (restarting, offline, behind a proxy whose server is down)
/// from a photo's upload failing: only the second costs the photo an attempt. Shared by `drain`
/// and `agent`, so both defer the same failures for free.
enum Reachability {
    /// True when a reachability check got no HTTP answer at all. A lost connection counts: a
    /// proxy in front of a stopped server accepts the connection and closes it.
    static func isUnreachable(_ error: TransferError) -> Bool {
        switch error.code {
        case .connectionFailed, .hostNotFound, .connectionLost, .timedOut: true
        default: false
        }
    }

    /// Can `destination` be reached now? (A discovery request; any HTTP answer counts.)
    static func isReachable(_ destination: any UploadDestination) async -> Bool {
        do {
            try await destination.checkReachable()
            return true
        } catch {
            return !isUnreachable(error)
        }
    }

    /// Whether a job that failed with `failure` failed because `destination` is away: a transient
    /// failure that could not connect at all, or any other transient one after which the
    /// destination does not answer a reachability check either.
    static func destinationIsAway(after failure: UploadJob.Failure, destination: any UploadDestination) async -> Bool {
        guard failure.transient else { return false }
        if failure.code == TransferError.Code.connectionFailed.rawValue || failure.code == TransferError.Code.hostNotFound.rawValue {
            return true
        }
        return !(await isReachable(destination))
    }
}
