import Foundation
import UploadProtocol

/// Upload state on the asset rows: the direct path the foreground drain uses, and the job store
/// the `wake` runner and the transfer `agent` share.
extension AssetStore {
    /// What acknowledging or retrying a job writes on the photo's row.
    public enum AssetUpdate: Sendable, Equatable {
        /// The server acknowledged it: `uploaded_at`, the server's id and how receipt was proven.
        case uploaded(serverID: String?, proof: ReceiptProof = .verified)
        /// A counted failure: the new attempt count and reason, and whether the photo is now failed.
        case failure(attempts: Int, message: String, terminal: Bool)
        /// Nothing to record (a deferral).
        case unchanged
    }

    /// Thrown by `createJob` and `retryJob` past the inflight limit.
    public static let limitExceeded = StoreError(.limitExceeded, "the inflight job limit is reached; acknowledge finished jobs first")

    // MARK: Direct uploads (drain)

    /// Claims up to `limit` analysed, not uploaded, not failed photos that no live job or other
    /// runner holds, least recently attempted first (never-attempted before all), and stamps
    /// `last_attempt_at`: a flaky photo rotates to the back and cannot stall a page. Files with an
    /// `unanalysable` verdict are left out unless `includeUnanalysable`.
    public func claimForUpload(limit: Int, leaseSeconds: Double = 600, includeUnanalysable: Bool = false,
                               maxSize: Int64? = nil) throws(StoreError) -> [AssetRecord] {
        guard limit > 0 else { return [] }
        let now = FileTree.now()
        return try withDatabase { (db) throws(StoreError) -> [AssetRecord] in
            try db.transaction { () throws(StoreError) -> [AssetRecord] in
                try voidDeadLeases(db, now: now)
                let order = try db.query("""
                    SELECT a.id FROM assets a
                    WHERE a.analyzed_at IS NOT NULL AND a.uploaded_at IS NULL AND a.failed = 0
                      AND (a.lease_owner IS NULL OR a.lease_until < ?)
                      AND NOT EXISTS (SELECT 1 FROM upload_jobs j WHERE j.asset_id = a.id)
                      AND (? OR a.\(Self.notUnanalysable)) AND \(filter.sql("a.path")) AND a.size <= ?
                      AND \(Companions.readySQL("a"))
                    ORDER BY a.last_attempt_at IS NOT NULL, a.last_attempt_at, a.id LIMIT ?
                    """, [.real(now), .integer(includeUnanalysable ? 1 : 0), .integer(maxSize ?? Int64.max), .integer(Int64(limit))]).compactMap { $0.first?.int }
                var claimed: [AssetRecord] = []
                for id in order {
                    let rows = try db.query("""
                        UPDATE assets SET lease_owner = ?, lease_until = ?, last_attempt_at = ? WHERE id = ?
                        RETURNING \(AssetRecord.columns)
                        """, [.text(leaseOwner), .real(now + leaseSeconds), .real(now), .integer(Int64(id))])
                    claimed += rows.map(AssetRecord.init(row:))
                }
                return claimed
            }
        }
    }

    /// Photos waiting for upload (analysed, not uploaded, not failed); files with an `unanalysable`
    /// verdict only when `includeUnanalysable`.
    public func uploadableCount(includeUnanalysable: Bool = false, maxSize: Int64? = nil) throws(StoreError) -> Int {
        try withDatabase { (db) throws(StoreError) in
            try db.query("""
                SELECT COUNT(*) FROM assets WHERE analyzed_at IS NOT NULL AND uploaded_at IS NULL AND failed = 0
                  AND (? OR \(Self.notUnanalysable)) AND \(filter.sql("path")) AND size <= ?
                  AND \(Companions.readySQL("assets"))
                """, [.integer(includeUnanalysable ? 1 : 0), .integer(maxSize ?? Int64.max)]).first?.first?.int ?? 0
        }
    }

    /// Records a durable acknowledgement on the row, if it is still the version that was sent,
    /// and the active destination's mark.
    @discardableResult
    public func recordUploaded(_ asset: AssetRecord, serverID: String?, proof: ReceiptProof = .verified) throws(StoreError) -> Bool {
        try withDatabase { (db) throws(StoreError) -> Bool in
            try db.transaction { () throws(StoreError) -> Bool in
                try markUploaded(db, assetID: asset.id, generation: asset.generation, serverID: serverID, proof: proof)
            }
        }
    }

    /// Sets the row's upload columns and the active destination's mark; false when the row is no
    /// longer that version.
    private func markUploaded(_ db: Database, assetID: Int64, generation: Int, serverID: String?, proof: ReceiptProof) throws(StoreError) -> Bool {
        let now = FileTree.now()
        let changed = try db.run("""
            UPDATE assets SET uploaded_at = ?, server_id = ?, upload_proof = ?, last_error = NULL, lease_owner = NULL, lease_until = NULL
            WHERE id = ? AND generation = ?
            """, [.real(now), SQLValue(serverID), .text(proof.rawValue), .integer(assetID), .integer(Int64(generation))]) == 1
        if changed { try recordUploadMark(db, assetID: assetID, generation: generation, serverID: serverID, proof: proof, at: now) }
        return changed
    }

    /// Records a counted failure: `attempts` and the reason, and the terminal failed state when
    /// `failed` is true.
    public func recordUploadFailure(_ asset: AssetRecord, attempts: Int, message: String, failed: Bool) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            _ = try db.run("""
                UPDATE assets SET attempts = ?, last_error = ?, failed = ?, lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND generation = ?
                """, [.integer(Int64(attempts)), .text(message), .integer(failed ? 1 : 0), .integer(asset.id), .integer(Int64(asset.generation))])
        }
    }

    /// Clears the failed state of every failed photo so they are tried again (a new destination or token).
    public func resetFailures() throws(StoreError) -> Int {
        try withDatabase { (db) throws(StoreError) in
            try db.run("UPDATE assets SET failed = 0, attempts = 0 WHERE failed != 0")
        }
    }

    /// Photos and jobs another live process holds now (another drain, analyze or agent on the
    /// same store), and those processes' ids: what a runner that found nothing more to do leaves to them.
    public func heldByOtherRunners() throws(StoreError) -> (count: Int, processes: [Int32]) {
        let now = FileTree.now()
        return try withDatabase { (db) throws(StoreError) -> (count: Int, processes: [Int32]) in
            let rows = try db.query("""
                SELECT lease_owner FROM assets WHERE lease_owner IS NOT NULL AND lease_owner != ? AND lease_until >= ?
                UNION ALL
                SELECT agent_owner FROM upload_jobs WHERE agent_owner IS NOT NULL AND agent_owner != ? AND agent_until >= ?
                """, [.text(leaseOwner), .real(now), .text(leaseOwner), .real(now)])
            var count = 0
            var processes: Set<Int32> = []
            for row in rows {
                guard let owner = row[0].string, let pid = owner.split(separator: ":").first.flatMap({ Int32($0) }),
                      pid != FileTree.processID, FileTree.processExists(pid) else { continue }
                count += 1
                processes.insert(pid)
            }
            return (count, processes.sorted())
        }
    }

    private func voidDeadLeases(_ db: Database, now: Double) throws(StoreError) {
        for row in try db.query("SELECT DISTINCT lease_owner FROM assets WHERE lease_owner IS NOT NULL AND lease_until >= ?", [.real(now)]) {
            guard let owner = row[0].string, let pid = owner.split(separator: ":").first.flatMap({ Int32($0) }),
                  pid > 0, !FileTree.processExists(pid) else { continue }
            try db.run("UPDATE assets SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?", [.text(owner)])
        }
    }

    // MARK: Upload jobs (wake + agent)

    /// Jobs not yet acknowledged: they hold places under the inflight limit.
    public func inflightJobCount() throws(StoreError) -> Int {
        try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT COUNT(*) FROM upload_jobs").first?.first?.int ?? 0
        }
    }

    /// Creates a registered job for an analysed photo. Throws `limitExceeded` when `inflightLimit`
    /// jobs are already unacknowledged; returns nil when the photo already has a live job or no
    /// longer needs one (uploaded, failed, changed, removed).
    public func createJob(for asset: AssetRecord, destination: String, headers: [String: String] = [:],
                          inflightLimit: Int) throws(StoreError) -> UploadJob? {
        let now = FileTree.now()
        return try withDatabase { (db) throws(StoreError) -> UploadJob? in
            try db.transaction { () throws(StoreError) -> UploadJob? in
                let count = try db.query("SELECT COUNT(*) FROM upload_jobs").first?.first?.int ?? 0
                guard count < inflightLimit else { throw Self.limitExceeded }
                let eligible = try db.query("""
                    SELECT 1 FROM assets a WHERE a.id = ? AND a.generation = ? AND a.analyzed_at IS NOT NULL
                      AND a.uploaded_at IS NULL AND a.failed = 0
                      AND NOT EXISTS (SELECT 1 FROM upload_jobs j WHERE j.asset_id = a.id AND j.state IN ('registered', 'pending'))
                    """, [.integer(asset.id), .integer(Int64(asset.generation))])
                guard !eligible.isEmpty else { return nil }
                return try db.query("""
                    INSERT INTO upload_jobs(asset_id, asset_generation, state, destination, request_headers, created_at, updated_at)
                    VALUES (?, ?, 'registered', ?, ?, ?, ?) RETURNING \(UploadJob.columns)
                    """, [.integer(asset.id), .integer(Int64(asset.generation)), .text(Self.destinationKey(destination)),
                          .text(JSONText.encode(headers)), .real(now), .real(now)]).first.map(UploadJob.init(row:))
            }
        }
    }

    /// Analysed photos that need a job: not uploaded, not failed, no job of any state yet; files
    /// with an `unanalysable` verdict only when `includeUnanalysable`.
    public func assetsNeedingJobs(limit: Int, includeUnanalysable: Bool = false, maxSize: Int64? = nil) throws(StoreError) -> [AssetRecord] {
        try withDatabase { (db) throws(StoreError) in
            try db.query("""
                SELECT \(AssetRecord.columns) FROM assets a
                WHERE a.analyzed_at IS NOT NULL AND a.uploaded_at IS NULL AND a.failed = 0
                  AND NOT EXISTS (SELECT 1 FROM upload_jobs j WHERE j.asset_id = a.id)
                  AND (? OR a.\(Self.notUnanalysable)) AND \(filter.sql("a.path")) AND a.size <= ?
                  AND \(Companions.readySQL("a"))
                ORDER BY a.last_attempt_at IS NOT NULL, a.last_attempt_at, a.id LIMIT ?
                """, [.integer(includeUnanalysable ? 1 : 0), .integer(maxSize ?? Int64.max), .integer(Int64(limit))]).map(AssetRecord.init(row:))
        }
    }

    /// The job with `id` as it stands now, or nil when it is gone.
    public func job(id: Int64) throws(StoreError) -> UploadJob? {
        try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT \(UploadJob.columns) FROM upload_jobs WHERE id = ?", [.integer(id)])
                .first.map(UploadJob.init(row:))
        }
    }

    /// Jobs for an action (see `UploadJob.Action`). For `.retry`, `maxAttempts` bounds the photo's
    /// counted failures: a job whose next failure would pass it is acknowledged instead; and a job
    /// whose `retryNotBefore` (the server's `Retry-After`) is later than `now` is left for later.
    public func jobs(for action: UploadJob.Action, maxAttempts: Int = 5, now: Date = Date()) throws(StoreError) -> [UploadJob] {
        let sql: String
        var arguments: [SQLValue] = []
        switch action {
        case .retry:
            arguments = [.real(now.timeIntervalSince1970)]
            sql = """
                SELECT \(UploadJob.columns) FROM upload_jobs j LEFT JOIN assets a ON a.id = j.asset_id
                WHERE j.state = 'failed' AND j.error_transient = 1 AND a.id IS NOT NULL AND a.attempts + 1 < \(maxAttempts)
                  AND (j.retry_not_before IS NULL OR j.retry_not_before <= ?)
                ORDER BY j.id
                """
        case .acknowledge:
            sql = "SELECT \(UploadJob.columns) FROM upload_jobs WHERE state IN ('succeeded', 'failed') ORDER BY id"
        case .process:
            sql = "SELECT \(UploadJob.columns) FROM upload_jobs WHERE state IN ('registered', 'pending') ORDER BY id"
        }
        return try withDatabase { (db) throws(StoreError) in
            try db.query(sql.replacingColumns(), arguments).map(UploadJob.init(row:))
        }
    }

    /// The earliest time a failed job for `destination` may be retried, of those whose server
    /// asked (`Retry-After`) to wait past `now` and that the retry policy would retry (a transient
    /// failure, `maxAttempts` not reached); nil when none waits. Only photos the filter lets through count.
    public func nextRetryAfter(destination: String, maxAttempts: Int, now: Date = Date()) throws(StoreError) -> Date? {
        try withDatabase { (db) throws(StoreError) -> Date? in
            try db.query("""
                SELECT MIN(j.retry_not_before) FROM upload_jobs j JOIN assets a ON a.id = j.asset_id AND a.generation = j.asset_generation
                WHERE j.state = 'failed' AND j.error_transient = 1 AND a.attempts + 1 < ? AND j.retry_not_before > ?
                  AND j.destination = ? AND \(filter.sql("a.path"))
                """, [.integer(Int64(maxAttempts)), .real(now.timeIntervalSince1970), .text(Self.destinationKey(destination))])
                .first?.first?.double.map(Date.init(timeIntervalSince1970:))
        }
    }

    /// Retries a failed job: records `update` (its counted failure) on the photo, removes it, and
    /// registers a new job that keeps the upload URL and offset (or starts afresh for a new
    /// `destination`), all in one transaction.
    public func retryJob(_ job: UploadJob, update: AssetUpdate, destination: String? = nil,
                         inflightLimit: Int) throws(StoreError) -> UploadJob? {
        let now = FileTree.now()
        return try withDatabase { (db) throws(StoreError) -> UploadJob? in
            try db.transaction { () throws(StoreError) -> UploadJob? in
                guard let current = try db.query("SELECT \(UploadJob.columns) FROM upload_jobs WHERE id = ?", [.integer(job.id)])
                    .first.map(UploadJob.init(row:)), current.state == .failed, let assetID = current.assetID else { return nil }
                let others = (try db.query("SELECT COUNT(*) FROM upload_jobs WHERE id != ?", [.integer(job.id)]).first?.first?.int ?? 0)
                guard others < inflightLimit else { throw Self.limitExceeded }
                try apply(update, db, assetID: assetID, generation: current.assetGeneration)
                try db.run("DELETE FROM upload_jobs WHERE id = ?", [.integer(job.id)])
                let target = destination.map(Self.destinationKey) ?? current.destination
                let keepResume = target == current.destination
                return try db.query("""
                    INSERT INTO upload_jobs(asset_id, asset_generation, state, destination, request_headers, resume_url,
                      confirmed_offset, created_at, updated_at)
                    VALUES (?, ?, 'registered', ?, ?, ?, ?, ?, ?) RETURNING \(UploadJob.columns)
                    """, [.integer(assetID), .integer(Int64(current.assetGeneration)), .text(target),
                          .text(JSONText.encode(current.requestHeaders)), keepResume ? SQLValue(current.resumeURL) : .null,
                          .integer(keepResume ? current.confirmedOffset : 0), .real(now), .real(now)]).first.map(UploadJob.init(row:))
            }
        }
    }

    /// Cancels a registered or pending job; a cancelled job is acknowledged at once (removed),
    /// charging the photo nothing. Returns false when the job had already finished.
    @discardableResult
    public func cancelJob(_ job: UploadJob) throws(StoreError) -> Bool {
        try withDatabase { (db) throws(StoreError) -> Bool in
            try db.run("DELETE FROM upload_jobs WHERE id = ? AND state IN ('registered', 'pending')", [.integer(job.id)]) == 1
        }
    }

    /// Live jobs made redundant: the photo was removed, changed since the job was made, or is
    /// already uploaded.
    public func redundantJobs() throws(StoreError) -> [UploadJob] {
        try withDatabase { (db) throws(StoreError) in
            try db.query("""
                SELECT \(UploadJob.columns) FROM upload_jobs j LEFT JOIN assets a ON a.id = j.asset_id
                WHERE j.state IN ('registered', 'pending')
                  AND (a.id IS NULL OR a.generation != j.asset_generation OR a.uploaded_at IS NOT NULL)
                ORDER BY j.id
                """.replacingColumns()).map(UploadJob.init(row:))
        }
    }

    /// Acknowledges a finished job: in one transaction, records on the photo's row what `decide`
    /// says of the job's outcome (it sees the job and the photo's current row), then removes the
    /// job. The retry policy lives with the caller; the store only makes it durable.
    public func acknowledgeJob(_ job: UploadJob, decide: (UploadJob, AssetRecord?) -> AssetUpdate) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                guard let current = try db.query("SELECT \(UploadJob.columns) FROM upload_jobs WHERE id = ?", [.integer(job.id)])
                    .first.map(UploadJob.init(row:)), current.state == .succeeded || current.state == .failed else { return }
                if let assetID = current.assetID {
                    let asset = try db.query("SELECT \(AssetRecord.columns) FROM assets WHERE id = ? AND generation = ?",
                                             [.integer(assetID), .integer(Int64(current.assetGeneration))]).first.map(AssetRecord.init(row:))
                    try apply(decide(current, asset), db, assetID: assetID, generation: current.assetGeneration)
                }
                try db.run("DELETE FROM upload_jobs WHERE id = ?", [.integer(job.id)])
            }
        }
    }

    private func apply(_ update: AssetUpdate, _ db: Database, assetID: Int64, generation: Int) throws(StoreError) {
        let now = FileTree.now()
        switch update {
        case .uploaded(let serverID, let proof):
            _ = try markUploaded(db, assetID: assetID, generation: generation, serverID: serverID, proof: proof)
        case .failure(let attempts, let message, let terminal):
            try db.run("""
                UPDATE assets SET attempts = ?, last_error = ?, last_attempt_at = ?, failed = ?, lease_owner = NULL, lease_until = NULL
                WHERE id = ? AND generation = ?
                """, [.integer(Int64(attempts)), .text(message), .real(now), .integer(terminal ? 1 : 0),
                      .integer(assetID), .integer(Int64(generation))])
        case .unchanged:
            try db.run("UPDATE assets SET lease_owner = NULL, lease_until = NULL WHERE id = ?", [.integer(assetID)])
        }
    }
}

private extension String {
    /// Qualifies the job columns with the `j.` alias for joined queries.
    func replacingColumns() -> String {
        guard contains("upload_jobs j") else { return self }
        let qualified = UploadJob.columns.split(separator: ",").map { "j." + $0.trimmingPrefix(" ") }.joined(separator: ", ")
        return replacingOccurrences(of: UploadJob.columns, with: qualified)
    }
}
