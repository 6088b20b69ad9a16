import Foundation
import UploadProtocol

/// Uploads per destination (store migration 7). A photo's upload columns (`uploaded_at`,
/// `server_id`, `upload_proof`) describe the store's active destination only; the `uploads` table
/// keeps every destination's marks. A runner names its destination first (`useDestination`): a
/// new one is refused unless asked for, and switching restores that destination's own marks, so
/// "uploaded" always means uploaded *there*.
extension AssetStore {
    /// What `useDestination` found.
    public struct DestinationUse: Sendable, Equatable {
        /// The destination the store used before, when it was another one (a switch happened).
        public var previous: String?
        /// Photos already uploaded to the destination now active.
        public var alreadyThere: Int
    }

    /// One destination's marks, for `status`.
    public struct DestinationCount: Sendable, Equatable, Codable {
        public var destination: String
        /// Photos whose current version is marked uploaded there.
        public var uploaded: Int
        /// Of those, marks the destination gave no proof for (`--accept-unverified`).
        public var unverified: Int
        /// True for the store's active destination.
        public var active: Bool
    }

    /// The form destinations are compared and kept in: never a secret. An HTTP(S) URL loses its
    /// user info, query and fragment (a password or `?access_token=` in `--to` must not reach the
    /// store, `status` or JSON), its trailing `/`, and has its scheme and host lowercased, its
    /// path's case kept (`HTTP://bob:pw@Host:8080/Uploads/?t=x` is `http://host:8080/Uploads`).
    /// An S3 identity (`s3://BUCKET/PREFIX at ENDPOINT`, where a prefix may hold any character)
    /// only loses a trailing `/`. Transfer's `DestinationIdentity` gives runners the same form;
    /// every value the store writes or looks up goes through this first.
    public static func destinationKey(_ url: String) -> String {
        var text = Substring(url.trimmingCharacters(in: .whitespaces))
        let s3 = text.lowercased().hasPrefix("s3://")
        if !s3, let cut = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<cut] }
        while text.hasSuffix("/") && !text.hasSuffix("://") { text.removeLast() }
        guard let schemeEnd = text.range(of: "://") else { return String(text) }
        let afterScheme = text[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        var authority = afterScheme[..<authorityEnd]
        if !s3, let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        return (text[..<schemeEnd.upperBound] + authority).lowercased() + text[authorityEnd...]
    }

    /// The destination the photos' upload marks describe; nil before any runner named one.
    public func activeDestination() throws(StoreError) -> String? {
        try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT value FROM meta WHERE key = 'destination'").first?.first?.string
        }
    }

    /// Makes `url` the destination the upload marks describe. The first destination a store sees
    /// is adopted (with any marks made before migration 7, which name none). Another destination
    /// than the active one throws `destinationChanged` unless `allowChange` or nothing was
    /// uploaded to the active one (then `previous` is nil); on a switch, the active
    /// destination's marks are kept in `uploads`, the new one's are restored onto the rows (none
    /// for a destination never used), failures charged against the old one are cleared, and live
    /// jobs for the old one are dropped (their partial uploads expire on that server).
    ///
    /// `formerly` is the form an earlier PhotoDrain recorded the same destination in, when it
    /// was another (see `adoptDestination`).
    @discardableResult
    public func useDestination(_ url: String, formerly: String? = nil, allowChange: Bool) throws(StoreError) -> DestinationUse {
        let key = Self.destinationKey(url)
        return try withDatabase { (db) throws(StoreError) -> DestinationUse in
            try db.transaction { () throws(StoreError) -> DestinationUse in
                if let formerly { try Self.adopt(db, key: key, formerly: Self.destinationKey(formerly)) }
                let current = try db.query("SELECT value FROM meta WHERE key = 'destination'").first?.first?.string
                if current == key {
                    return DestinationUse(previous: nil, alreadyThere: try uploadedCount(db))
                }
                guard let current else {
                    try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('destination', ?)", [.text(key)])
                    try db.run("""
                        INSERT OR REPLACE INTO uploads(asset_id, destination, generation, server_id, uploaded_at, proof)
                        SELECT id, ?, generation, server_id, uploaded_at, COALESCE(upload_proof, 'legacy')
                        FROM assets WHERE uploaded_at IS NOT NULL
                        """, [.text(key)])
                    return DestinationUse(previous: nil, alreadyThere: try uploadedCount(db))
                }
                let there = try uploadedCount(db)
                // A destination nothing reached (a wrong URL, a captive portal) is no reason to
                // refuse the next one.
                guard allowChange || there == 0 else {
                    // An S3 destination is named by its URL and its endpoint (`s3://B/P at ORIGIN`).
                    let howToName: String
                    if let at = current.range(of: " at ", options: .backwards), current.lowercased().hasPrefix("s3://") {
                        howToName = "--to \(current[..<at.lowerBound]) with the --s3-endpoint (or, on AWS, the --s3-region) of \(current[at.upperBound...])"
                    } else {
                        howToName = "--to \(current)"
                    }
                    throw StoreError(.destinationChanged, """
                        this library's uploads went to \(current) (\(there) photo\(there == 1 ? "" : "s") there), \
                        and --to names another destination, \(key). To upload the library there as well, run again with \
                        --new-destination (each destination keeps its own uploads; status counts both); \
                        to go on with the first one, pass \(howToName)
                        """)
                }
                // Keep the old destination's marks, including those of finished jobs not yet
                // acknowledged, before the rows take the new one's.
                try db.run("""
                    INSERT OR REPLACE INTO uploads(asset_id, destination, generation, server_id, uploaded_at, proof)
                    SELECT id, ?, generation, server_id, uploaded_at, COALESCE(upload_proof, 'legacy')
                    FROM assets WHERE uploaded_at IS NOT NULL
                    """, [.text(current)])
                let now = FileTree.now()
                for job in try db.query("SELECT \(UploadJob.columns) FROM upload_jobs WHERE state = 'succeeded'").map(UploadJob.init(row:)) {
                    guard let assetID = job.assetID else { continue }
                    try db.run("""
                        INSERT OR REPLACE INTO uploads(asset_id, destination, generation, server_id, uploaded_at, proof)
                        SELECT id, ?, generation, ?, ?, ? FROM assets WHERE id = ? AND generation = ?
                        """, [.text(Self.destinationKey(job.destination)), SQLValue(job.serverID),
                              .real(now), .text((job.proof ?? .verified).rawValue), .integer(assetID), .integer(Int64(job.assetGeneration))])
                }
                try db.run("DELETE FROM upload_jobs")
                try db.run("""
                    UPDATE assets SET
                      uploaded_at = (SELECT u.uploaded_at FROM uploads u WHERE u.asset_id = assets.id AND u.destination = ?1 AND u.generation = assets.generation),
                      server_id = (SELECT u.server_id FROM uploads u WHERE u.asset_id = assets.id AND u.destination = ?1 AND u.generation = assets.generation),
                      upload_proof = (SELECT u.proof FROM uploads u WHERE u.asset_id = assets.id AND u.destination = ?1 AND u.generation = assets.generation),
                      failed = 0, attempts = 0, last_error = NULL, last_attempt_at = NULL
                    """, [.text(key)])
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('destination', ?)", [.text(key)])
                return DestinationUse(previous: there > 0 ? current : nil, alreadyThere: try uploadedCount(db))
            }
        }
    }

    /// Renames the destination an earlier PhotoDrain recorded as `formerly` to `key`, wherever the
    /// store names it (the active destination, the marks, the jobs), when the two differ. An S3
    /// destination was recorded as its bare `s3://BUCKET/PREFIX` before its identity included the
    /// endpoint (`DestinationIdentity`): the endpoint those uploads went to was never recorded, so
    /// the first run after the upgrade that names the same bucket and prefix takes them as its
    /// own, at whatever endpoint it names; from then on another endpoint is another destination.
    public func adoptDestination(_ key: String, formerly: String) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                try Self.adopt(db, key: Self.destinationKey(key), formerly: Self.destinationKey(formerly))
            }
        }
    }

    private static func adopt(_ db: Database, key: String, formerly: String) throws(StoreError) {
        guard formerly != key else { return }
        try db.run("UPDATE meta SET value = ? WHERE key = 'destination' AND value = ?", [.text(key), .text(formerly)])
        // A mark already made under the new form is the newer one: it stays.
        try db.run("UPDATE OR IGNORE uploads SET destination = ? WHERE destination = ?", [.text(key), .text(formerly)])
        try db.run("DELETE FROM uploads WHERE destination = ?", [.text(formerly)])
        try db.run("UPDATE upload_jobs SET destination = ? WHERE destination = ?", [.text(key), .text(formerly)])
    }

    /// Every destination with marks on current file versions, the active one first.
    public func destinationCounts() throws(StoreError) -> [DestinationCount] {
        try withDatabase { (db) throws(StoreError) -> [DestinationCount] in
            let active = try db.query("SELECT value FROM meta WHERE key = 'destination'").first?.first?.string
            var counts = try db.query("""
                SELECT u.destination, COUNT(*), SUM(u.proof = 'unverified') FROM uploads u
                JOIN assets a ON a.id = u.asset_id AND a.generation = u.generation
                WHERE \(filter.sql("a.path"))
                GROUP BY u.destination ORDER BY u.destination
                """).map { row in
                DestinationCount(destination: row[0].string ?? "", uploaded: row[1].int ?? 0, unverified: row[2].int ?? 0,
                                 active: row[0].string == active)
            }
            if let active, !counts.contains(where: \.active) {
                counts.append(DestinationCount(destination: active, uploaded: 0, unverified: 0, active: true))
            }
            return counts.sorted { ($0.active ? 0 : 1, $0.destination) < ($1.active ? 0 : 1, $1.destination) }
        }
    }

    /// The photos marked uploaded to `destination` (current file versions), by path, with the
    /// server id and proof recorded there; the filter applies.
    public func uploadedAssets(to destination: String) throws(StoreError) -> [(asset: AssetRecord, serverID: String?, proof: String)] {
        let key = Self.destinationKey(destination)
        return try withDatabase { (db) throws(StoreError) in
            let columns = AssetColumn.selectList(qualifiedBy: "a")
            return try db.query("""
                SELECT \(columns), u.server_id, u.proof FROM uploads u
                JOIN assets a ON a.id = u.asset_id AND a.generation = u.generation
                WHERE u.destination = ? AND \(filter.sql("a.path")) ORDER BY a.path
                """, [.text(key)]).map { row in
                let extra = AssetColumn.allCases.count
                return (AssetRecord(row: row), row[extra].string, row[extra + 1].string ?? "legacy")
            }
        }
    }

    /// Records what `photodrain verify` found for one photo at `destination`: present marks the
    /// upload verified (a mark made before proof of receipt becomes proven); missing removes the
    /// mark, so the next drain or wake for that destination sends the photo again. Only for the
    /// file version the mark describes. True when a row changed.
    @discardableResult
    public func recordVerification(_ asset: AssetRecord, destination: String, present: Bool) throws(StoreError) -> Bool {
        let key = Self.destinationKey(destination)
        return try withDatabase { (db) throws(StoreError) -> Bool in
            try db.transaction { () throws(StoreError) -> Bool in
                let active = try db.query("SELECT value FROM meta WHERE key = 'destination'").first?.first?.string == key
                let id = SQLValue.integer(asset.id), generation = SQLValue.integer(Int64(asset.generation))
                if present {
                    let changed = try db.run("UPDATE uploads SET proof = 'verified' WHERE asset_id = ? AND destination = ? AND generation = ?",
                                             [id, .text(key), generation])
                    if active {
                        try db.run("UPDATE assets SET upload_proof = 'verified' WHERE id = ? AND generation = ? AND uploaded_at IS NOT NULL",
                                   [id, generation])
                    }
                    return changed == 1
                }
                let changed = try db.run("DELETE FROM uploads WHERE asset_id = ? AND destination = ? AND generation = ?",
                                         [id, .text(key), generation])
                if active {
                    try db.run("""
                        UPDATE assets SET uploaded_at = NULL, server_id = NULL, upload_proof = NULL, failed = 0, attempts = 0,
                          last_error = NULL, last_attempt_at = NULL
                        WHERE id = ? AND generation = ?
                        """, [id, generation])
                }
                return changed == 1
            }
        }
    }

    /// Writes the active destination's mark for a photo just recorded uploaded on its row.
    func recordUploadMark(_ db: Database, assetID: Int64, generation: Int, serverID: String?, proof: ReceiptProof, at now: Double) throws(StoreError) {
        try db.run("""
            INSERT OR REPLACE INTO uploads(asset_id, destination, generation, server_id, uploaded_at, proof)
            SELECT ?, value, ?, ?, ?, ? FROM meta WHERE key = 'destination'
            """, [.integer(assetID), .integer(Int64(generation)), SQLValue(serverID), .real(now), .text(proof.rawValue)])
    }

    private func uploadedCount(_ db: Database) throws(StoreError) -> Int {
        try db.query("SELECT COUNT(*) FROM assets WHERE uploaded_at IS NOT NULL").first?.first?.int ?? 0
    }
}
