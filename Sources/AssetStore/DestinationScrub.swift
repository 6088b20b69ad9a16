/// Store migration 9: takes the secrets an earlier PhotoDrain kept out of the store. Destinations
/// were kept as the `--to` URL, so a password in its user info or a token in its query
/// (`http://bob:password@host/uploads?access_token=…`) sat in `meta` (the active destination),
/// `uploads.destination` and `upload_jobs.destination`, and from there in `status`, `verify` and
/// their JSON. Each such value becomes its `AssetStore.destinationKey` (the same place, without
/// them), and the secret's text is cut from every other column a URL or a message may have
/// carried it into: a job's upload URL, response headers and error, a photo's last error.
/// (`meta` holds the library's path, which a short secret's text could be part of: only its
/// destination is rewritten there.)
enum DestinationScrub {
    /// Rewrites the rows that hold a secret; true when there were any.
    static func run(_ db: Database) throws(StoreError) -> Bool {
        var values: Set<String> = []
        for sql in ["SELECT value FROM meta WHERE key = 'destination'", "SELECT DISTINCT destination FROM uploads",
                    "SELECT DISTINCT destination FROM upload_jobs"] {
            for row in try db.query(sql) { if let value = row.first?.string { values.insert(value) } }
        }
        var secrets: Set<String> = []
        var renames: [(from: String, to: String)] = []
        for value in values.sorted() {
            let key = AssetStore.destinationKey(value)
            guard key != value else { continue }
            let found = secretParts(of: value)
            guard !found.isEmpty else { continue }
            secrets.formUnion(found)
            renames.append((value, key))
        }
        guard !renames.isEmpty else { return false }
        // Freed cells and pages are zeroed, not left holding the old text.
        let secureDelete = try db.query("PRAGMA secure_delete").first?.first?.int ?? 0
        try db.execute("PRAGMA secure_delete = ON")
        for (from, to) in renames {
            try db.run("UPDATE meta SET value = ? WHERE key = 'destination' AND value = ?", [.text(to), .text(from)])
            // Marks for one place under two spellings: the one already under the clean form stays.
            try db.run("UPDATE OR IGNORE uploads SET destination = ? WHERE destination = ?", [.text(to), .text(from)])
            try db.run("DELETE FROM uploads WHERE destination = ?", [.text(from)])
            try db.run("UPDATE upload_jobs SET destination = ? WHERE destination = ?", [.text(to), .text(from)])
        }
        // Longest first, so a secret that holds another is cut whole.
        for secret in secrets.sorted(by: { $0.count > $1.count }) {
            for (table, column) in [("upload_jobs", "resume_url"), ("upload_jobs", "response_headers"), ("upload_jobs", "error_message"),
                                    ("assets", "last_error")] {
                try db.run("UPDATE \(table) SET \(column) = replace(\(column), ?1, '') WHERE instr(\(column), ?1) > 0", [.text(secret)])
            }
        }
        try db.execute("PRAGMA secure_delete = \(secureDelete)")
        return true
    }

    /// The parts of a stored destination URL that may be secret: its user info with the `@`
    /// (`bob:password@`), and its query or fragment with the `?` or `#`, each when it holds more
    /// than its delimiter. None for an S3 identity.
    static func secretParts(of url: String) -> [String] {
        guard !url.lowercased().hasPrefix("s3://"), let schemeEnd = url.range(of: "://") else { return [] }
        var parts: [String] = []
        let afterScheme = url[schemeEnd.upperBound...]
        let authority = afterScheme[..<(afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex)]
        if let at = authority.lastIndex(of: "@") { parts.append(String(authority[...at])) }
        if let start = url.firstIndex(where: { $0 == "?" || $0 == "#" }) { parts.append(String(url[start...])) }
        return parts.filter { $0.count > 1 }
    }
}
