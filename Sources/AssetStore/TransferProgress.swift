/// How far the uploads have got, for `status`: the jobs with the agent, the bytes the server has
/// confirmed and still needs, and, from the recent upload rate, an estimate of the time left.
public struct TransferProgress: Sendable, Equatable, Codable {
    /// Upload jobs registered or pending: with the agent.
    public var jobsInFlight = 0
    /// Upload jobs finished (succeeded or failed) that `wake` has not acknowledged yet.
    public var jobsToAcknowledge = 0
    /// Of those, failed jobs whose retry waits for their server's `Retry-After`.
    public var retriesWaiting = 0
    /// Seconds until the first of those may be retried; nil when none waits.
    public var retryWaitSeconds: Double?
    /// Bytes the server confirmed of the jobs in flight (their checkpointed offsets).
    public var bytesConfirmed: Int64 = 0
    /// Size of the files of the jobs in flight.
    public var bytesInFlight: Int64 = 0
    /// Size of the files uploaded.
    public var bytesUploaded: Int64 = 0
    /// Bytes still to send: files not uploaded, not failed and not held back as unanalysable,
    /// less what the server already confirmed.
    public var bytesRemaining: Int64 = 0
    /// Bytes per second uploaded over the recent window (including any idle time since); nil when
    /// nothing was uploaded in it.
    public var bytesPerSecond: Double?
    /// Seconds to send `bytesRemaining` at `bytesPerSecond`; nil without a rate.
    public var etaSeconds: Double?
}

extension AssetStore {
    /// The uploads' progress over the rows the filter lets through (jobs of removed photos count
    /// too). The rate is the bytes uploaded in the last `window` seconds over the time since the
    /// first of them; `includeUnanalysable` counts unanalysable files as still to send.
    public func transferProgress(window: Double = 600, includeUnanalysable: Bool = false) throws(StoreError) -> TransferProgress {
        let now = FileTree.now()
        let rowFilter = filter.sql("a.path")
        return try withDatabase { (db) throws(StoreError) -> TransferProgress in
            var progress = TransferProgress()
            let jobs = try db.query("""
                SELECT SUM(j.state IN ('registered', 'pending')), SUM(j.state IN ('succeeded', 'failed')),
                  TOTAL(CASE WHEN j.state IN ('registered', 'pending') THEN j.confirmed_offset END),
                  TOTAL(CASE WHEN j.state IN ('registered', 'pending') THEN a.size END),
                  SUM(j.state = 'failed' AND j.retry_not_before > ?),
                  MIN(CASE WHEN j.state = 'failed' AND j.retry_not_before > ? THEN j.retry_not_before END)
                FROM upload_jobs j LEFT JOIN assets a ON a.id = j.asset_id AND a.generation = j.asset_generation
                WHERE a.id IS NULL OR \(rowFilter)
                """, [.real(now), .real(now)]).first ?? []
            func int(_ row: [SQLValue], _ i: Int) -> Int64 { i < row.count ? Int64(row[i].int ?? Int(row[i].double ?? 0)) : 0 }
            progress.jobsInFlight = Int(int(jobs, 0))
            progress.jobsToAcknowledge = Int(int(jobs, 1))
            progress.bytesConfirmed = int(jobs, 2)
            progress.bytesInFlight = int(jobs, 3)
            progress.retriesWaiting = Int(int(jobs, 4))
            if jobs.count > 5, let first = jobs[5].double { progress.retryWaitSeconds = (first - now).rounded(.up) }
            let assets = try db.query("""
                SELECT TOTAL(CASE WHEN a.uploaded_at IS NOT NULL AND a.failed = 0 THEN a.size END),
                  TOTAL(CASE WHEN a.uploaded_at IS NULL AND a.failed = 0 AND (? OR a.\(Self.notUnanalysable)) THEN a.size END),
                  TOTAL(CASE WHEN a.uploaded_at >= ? THEN a.size END),
                  MIN(CASE WHEN a.uploaded_at >= ? THEN a.uploaded_at END)
                FROM assets a WHERE \(rowFilter)
                """, [.integer(includeUnanalysable ? 1 : 0), .real(now - window), .real(now - window)]).first ?? []
            progress.bytesUploaded = int(assets, 0)
            progress.bytesRemaining = max(0, int(assets, 1) - progress.bytesConfirmed)
            let recent = Double(int(assets, 2))
            if recent > 0, assets.count > 3, let first = assets[3].double {
                let rate = recent / max(now - first, 1)
                progress.bytesPerSecond = (rate * 10).rounded() / 10
                progress.etaSeconds = (Double(progress.bytesRemaining) / rate).rounded()
            }
            return progress
        }
    }
}
