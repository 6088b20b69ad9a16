import Foundation
import UploadProtocol

/// What `status`, `verdicts` and `report` read: counts and rows by state.
extension AssetStore {

    /// Counts by state, for `status`.
    public func counts() throws(StoreError) -> StatusCounts {
        try withDatabase { (db) throws(StoreError) -> StatusCounts in
            let row = try db.query("""
                SELECT COUNT(*),
                  SUM(analyzed_at IS NULL AND failed = 0),
                  SUM(analyzed_at IS NOT NULL AND uploaded_at IS NULL AND failed = 0 AND \(Self.notUnanalysable)),
                  SUM(uploaded_at IS NOT NULL AND failed = 0),
                  SUM(failed != 0),
                  SUM(analysis_error IS NOT NULL AND \(Self.notUnanalysable)),
                  SUM(face_count > 0),
                  TOTAL(face_count),
                  SUM(analyzed_at IS NOT NULL AND uploaded_at IS NULL AND failed = 0 AND NOT \(Self.notUnanalysable)),
                  (SELECT COUNT(*) FROM scan_problems WHERE \(filter.sql("path"))),
                  SUM(uploaded_at IS NOT NULL AND failed = 0 AND upload_proof = 'unverified'),
                  SUM(uploaded_at IS NOT NULL AND failed = 0 AND upload_proof = 'legacy'),
                  (SELECT TOTAL(hidden) FROM scan_directories)
                FROM assets WHERE \(filter.sql("path"))
                """).first ?? []
            func int(_ i: Int) -> Int { i < row.count ? (row[i].int ?? Int(row[i].double ?? 0)) : 0 }
            return StatusCounts(total: int(0), discovered: int(1), analyzed: int(2), uploaded: int(3),
                                failed: int(4), undecodable: int(5), withFaces: int(6), faces: int(7),
                                unanalysable: int(8), skipped: int(9), uploadedUnverified: int(10),
                                uploadedUnchecked: int(11), hidden: int(12))
        }
    }

    /// Every row the filter lets through, by path; optionally only those in `state`.
    public func assets(in state: AssetRecord.State? = nil) throws(StoreError) -> [AssetRecord] {
        var rows: [AssetRecord] = []
        try forEachAsset(in: state) { rows.append($0) }
        return rows
    }

    /// Hands `body` every row the filter lets through, by path (optionally only those in
    /// `state`), one at a time as it is read: what a command that prints the whole library uses,
    /// so its memory does not grow with the library. The store is held meanwhile: `body` must not
    /// call back into it.
    public func forEachAsset(in state: AssetRecord.State? = nil, _ body: (AssetRecord) throws(StoreError) -> Void) throws(StoreError) {
        let condition: String
        switch state {
        case nil: condition = "1"
        case .discovered: condition = "analyzed_at IS NULL AND failed = 0"
        case .analyzed: condition = "analyzed_at IS NOT NULL AND uploaded_at IS NULL AND failed = 0"
        case .uploaded: condition = "uploaded_at IS NOT NULL AND failed = 0 AND upload_proof IS NOT 'unverified'"
        case .uploadedUnverified: condition = "uploaded_at IS NOT NULL AND failed = 0 AND upload_proof = 'unverified'"
        case .failed: condition = "failed != 0"
        }
        try withDatabase { (db) throws(StoreError) in
            try db.forEach("SELECT \(AssetRecord.columns) FROM assets WHERE \(condition) AND \(filter.sql("path")) ORDER BY path") { (row) throws(StoreError) in
                try body(AssetRecord(row: row))
            }
        }
    }

    /// Photos whose verdict is a decode error, by path; not the unanalysable files.
    public func undecodableAssets() throws(StoreError) -> [AssetRecord] {
        try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT \(AssetRecord.columns) FROM assets WHERE analysis_error IS NOT NULL AND \(Self.notUnanalysable) AND \(filter.sql("path")) ORDER BY path")
                .map(AssetRecord.init(row:))
        }
    }

    /// Files whose verdict is `unanalysable` (not a photo PhotoDrain analyses), by path, whatever
    /// their upload state.
    public func unanalysableAssets() throws(StoreError) -> [AssetRecord] {
        try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT \(AssetRecord.columns) FROM assets WHERE label = ? AND \(filter.sql("path")) ORDER BY path",
                         [.text(AssetRecord.unanalysableLabel)])
                .map(AssetRecord.init(row:))
        }
    }

    /// SQL true for a row whose verdict is not `unanalysable` (including rows with no verdict yet).
    static let notUnanalysable = "label IS NOT '\(AssetRecord.unanalysableLabel)'"

    /// One photo's row by relative path.
    public func asset(path: String) throws(StoreError) -> AssetRecord? {
        try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT \(AssetRecord.columns) FROM assets WHERE path = ?", [.text(path)]).first.map(AssetRecord.init(row:))
        }
    }
}
