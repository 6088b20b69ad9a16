import Foundation
import UploadProtocol

/// The transfer agent's side of the upload jobs: claiming them, checkpointing their offsets,
/// recording how they ended, giving them back.
extension AssetStore {

    /// Claims up to `limit` jobs to perform: registered ones, and pending ones whose agent died or
    /// whose claim expired (they resume from the saved upload URL). Claimed jobs become pending,
    /// and their photos' `last_attempt_at` is stamped: an upload attempt starts here.
    public func claimJobsToPerform(limit: Int, leaseSeconds: Double = 300) throws(StoreError) -> [UploadJob] {
        let now = FileTree.now()
        return try withDatabase { (db) throws(StoreError) -> [UploadJob] in
            try db.transaction { () throws(StoreError) -> [UploadJob] in
                for row in try db.query("SELECT DISTINCT agent_owner FROM upload_jobs WHERE state = 'pending' AND agent_owner IS NOT NULL") {
                    guard let owner = row[0].string, let pid = owner.split(separator: ":").first.flatMap({ Int32($0) }),
                          pid > 0, !FileTree.processExists(pid) else { continue }
                    try db.run("UPDATE upload_jobs SET agent_owner = NULL, agent_until = NULL WHERE agent_owner = ?", [.text(owner)])
                }
                let claimed = try db.query("""
                    UPDATE upload_jobs SET state = 'pending', agent_owner = ?, agent_until = ?, updated_at = ?
                    WHERE id IN (SELECT id FROM upload_jobs
                                 WHERE state = 'registered' OR (state = 'pending' AND (agent_owner IS NULL OR agent_until < ?))
                                 ORDER BY id LIMIT ?)
                    RETURNING \(UploadJob.columns)
                    """, [.text(leaseOwner), .real(now + leaseSeconds), .real(now), .real(now), .integer(Int64(limit))])
                    .map(UploadJob.init(row:)).sorted { $0.id < $1.id }
                for job in claimed {
                    guard let assetID = job.assetID else { continue }
                    try db.run("UPDATE assets SET last_attempt_at = ? WHERE id = ? AND generation = ?",
                               [.real(now), .integer(assetID), .integer(Int64(job.assetGeneration))])
                }
                return claimed
            }
        }
    }

    /// The photo a job uploads, if it still exists at the job's version.
    public func asset(for job: UploadJob) throws(StoreError) -> AssetRecord? {
        guard let id = job.assetID else { return nil }
        return try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT \(AssetRecord.columns) FROM assets WHERE id = ? AND generation = ?",
                         [.integer(id), .integer(Int64(job.assetGeneration))]).first.map(AssetRecord.init(row:))
        }
    }

    /// Saves the upload URL and the confirmed offset of a job in progress; call before the first
    /// byte is sent, so a new agent can resume. Also extends the agent's claim.
    public func checkpointJob(_ job: UploadJob, resumeURL: String?, confirmedOffset: Int64, leaseSeconds: Double = 300) throws(StoreError) {
        let now = FileTree.now()
        try withDatabase { (db) throws(StoreError) in
            _ = try db.run("""
                UPDATE upload_jobs SET resume_url = ?, confirmed_offset = ?, updated_at = ?, agent_until = ?
                WHERE id = ? AND state = 'pending'
                """, [SQLValue(resumeURL), .integer(confirmedOffset), .real(now), .real(now + leaseSeconds), .integer(job.id)])
        }
    }

    /// Records how a performed job ended: a success's server id, a transient failure's time to
    /// wait (`retryNotBefore`), and the response's headers (names lowercased) for diagnosis either
    /// way. Returns false when the job was cancelled meanwhile.
    @discardableResult
    public func finishJob(_ job: UploadJob, result: JobResult) throws(StoreError) -> Bool {
        let now = FileTree.now()
        return try withDatabase { (db) throws(StoreError) -> Bool in
            switch result {
            case .succeeded(let status, let serverID, let headers, let proof, let alreadyStored):
                return try db.run("""
                    UPDATE upload_jobs SET state = 'succeeded', response_status = ?, response_headers = ?, updated_at = ?,
                      agent_owner = NULL, agent_until = NULL, error_domain = NULL, error_code = NULL, error_message = NULL, error_transient = NULL,
                      retry_not_before = NULL, proof = ?, already_stored = ?, server_id = ?
                    WHERE id = ? AND state = 'pending'
                    """, [.integer(Int64(status)), .text(JSONText.encode(headers)), .real(now), .text(proof.rawValue),
                          .integer(alreadyStored ? 1 : 0), SQLValue(serverID), .integer(job.id)]) == 1
            case .failed(let status, let headers, let failure, let retryNotBefore):
                // A transient failure may wait; a permanent one is never retried.
                let notBefore = failure.transient ? retryNotBefore?.timeIntervalSince1970 : nil
                return try db.run("""
                    UPDATE upload_jobs SET state = 'failed', response_status = ?, response_headers = ?, updated_at = ?,
                      agent_owner = NULL, agent_until = NULL, error_domain = ?, error_code = ?, error_message = ?, error_transient = ?,
                      retry_not_before = ?
                    WHERE id = ? AND state = 'pending'
                    """, [SQLValue(status), .text(JSONText.encode(headers)), .real(now), .text(failure.domain), .text(failure.code),
                          .text(failure.message), .integer(failure.transient ? 1 : 0), SQLValue(notBefore), .integer(job.id)]) == 1
            }
        }
    }

    /// Gives back a job this agent claimed but did not finish (it is stopping): another agent
    /// resumes it from the saved offset.
    public func releaseJob(_ job: UploadJob) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            _ = try db.run("UPDATE upload_jobs SET agent_owner = NULL, agent_until = NULL WHERE id = ? AND agent_owner = ?",
                           [.integer(job.id), .text(leaseOwner)])
        }
    }
}
