import Foundation
import UploadProtocol

/// Claiming photos for analysis and banking their verdicts.
extension AssetStore {

    /// Claims up to `limit` photos that have no verdict and are not being analysed by a live
    /// process, oldest discovery first. The claim lasts `leaseSeconds` or until this process dies.
    public func claimUnanalyzed(limit: Int, leaseSeconds: Double = 600) throws(StoreError) -> [AssetRecord] {
        guard limit > 0 else { return [] }
        let now = FileTree.now()
        return try withDatabase { (db) throws(StoreError) -> [AssetRecord] in
            try db.transaction { () throws(StoreError) -> [AssetRecord] in
                // A claim by a process that no longer exists is void at once.
                for row in try db.query("SELECT DISTINCT lease_owner FROM assets WHERE lease_owner IS NOT NULL AND lease_until >= ?", [.real(now)]) {
                    guard let owner = row[0].string else { continue }
                    let pid = owner.split(separator: ":").first.flatMap { Int32($0) } ?? 0
                    if pid > 0 && !FileTree.processExists(pid) {
                        try db.run("UPDATE assets SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?", [.text(owner)])
                    }
                }
                let rows = try db.query("""
                    UPDATE assets SET lease_owner = ?, lease_until = ?
                    WHERE id IN (SELECT id FROM assets
                                 WHERE analyzed_at IS NULL AND (lease_owner IS NULL OR lease_until < ?) AND \(filter.sql("path"))
                                 ORDER BY discovered_at, id LIMIT ?)
                    RETURNING \(AssetRecord.columns)
                    """, [.text(leaseOwner), .real(now + leaseSeconds), .real(now), .integer(Int64(limit))])
                return rows.map(AssetRecord.init(row:)).sorted { ($0.discoveredAt, $0.id) < ($1.discoveredAt, $1.id) }
            }
        }
    }

    /// Banks a verdict on the photo's row, if the row is still the one that was analysed (same
    /// generation) and has no verdict yet. Returns false when the result was dropped: the file
    /// changed or disappeared meanwhile, or another process banked first. The verdict's faces
    /// are written in the same transaction, so a row never has a verdict without them.
    @discardableResult
    public func bankVerdict(_ verdict: BankedVerdict, for asset: AssetRecord) throws(StoreError) -> Bool {
        let now = FileTree.now()
        return try withDatabase { (db) throws(StoreError) -> Bool in
            try db.transaction { () throws(StoreError) -> Bool in
                let banked = try db.run("""
                    UPDATE assets SET verdict = ?, label = ?, face_count = ?, score = ?, analysis_error = ?,
                      sha256 = COALESCE(?, sha256), format = COALESCE(?, format), width = COALESCE(?, width),
                      height = COALESCE(?, height), capture_date = ?, analyzed_at = ?, lease_owner = NULL, lease_until = NULL
                    WHERE id = ? AND generation = ? AND analyzed_at IS NULL
                    """, [.text(verdict.json), SQLValue(verdict.label), .integer(Int64(verdict.faceCount)),
                          SQLValue(verdict.score), SQLValue(verdict.analysisError), SQLValue(verdict.sha256),
                          SQLValue(verdict.format), SQLValue(verdict.width), SQLValue(verdict.height),
                          .text(verdict.captureDate ?? ""), .real(now), .integer(asset.id), .integer(Int64(asset.generation))]) == 1
                if banked { try Self.insertFaces(verdict.faces, assetID: asset.id, db) }
                return banked
            }
        }
    }

    /// Banks the capture date of a photo analysed before capture dates were banked with verdicts
    /// (nil: it has none), if the row is still that version and has none banked. Returns false
    /// when it was not banked: the file changed, or the date is banked already.
    @discardableResult
    public func bankCaptureDate(_ date: String?, for asset: AssetRecord) throws(StoreError) -> Bool {
        try withDatabase { (db) throws(StoreError) -> Bool in
            try db.run("UPDATE assets SET capture_date = ? WHERE id = ? AND generation = ? AND capture_date IS NULL",
                       [.text(date ?? ""), .integer(asset.id), .integer(Int64(asset.generation))]) == 1
        }
    }

    /// Gives back this store object's unfinished claims, so another runner can take them now.
    public func releaseClaims() throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            _ = try db.run("UPDATE assets SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?", [.text(leaseOwner)])
        }
    }

    /// Gives back this store object's claim on one photo.
    public func releaseClaim(assetID: Int64) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            _ = try db.run("UPDATE assets SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?",
                           [.integer(assetID), .text(leaseOwner)])
        }
    }

    /// Photos still without a verdict.
    public func unanalyzedCount() throws(StoreError) -> Int {
        try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT COUNT(*) FROM assets WHERE analyzed_at IS NULL AND \(filter.sql("path"))").first?.first?.int ?? 0
        }
    }
}
