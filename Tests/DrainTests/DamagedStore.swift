import Foundation
@testable import AssetStore

/// Damages one table of a closed store on disk, as a failing disk or a stray write would.
enum DamagedStore {
    /// Overwrites the root page of `table` in the store at `path` with junk. The store must not
    /// be open elsewhere; its write-ahead log is checkpointed into the file first.
    static func damage(table: String, inStoreAt path: String) throws {
        let page: Int
        let pageSize: Int
        do {
            let db = try Database(path: path)
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            page = try db.query("SELECT rootpage FROM sqlite_master WHERE name = ?", [.text(table)]).first?.first?.int ?? 0
            pageSize = try db.query("PRAGMA page_size").first?.first?.int ?? 4096
        }
        guard page > 1, let file = FileHandle(forUpdatingAtPath: path) else { throw CocoaError(.fileWriteUnknown) }
        defer { try? file.close() }
        try file.seek(toOffset: UInt64((page - 1) * pageSize))
        try file.write(contentsOf: Data((0..<pageSize).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }))
    }
}
