import Foundation
import UploadProtocol

/// The store's own upkeep and settings: checkpointing the log, the last wait for a run
/// condition, whether hidden files belong to the library.
extension AssetStore {
    /// Copies the write-ahead log into the database file and empties it (`wal_checkpoint(TRUNCATE)`),
    /// so the `.sqlite` file alone holds everything: a backup that copies only it loses nothing.
    /// Runners call it as they end. Best effort: a reader holding an old snapshot (another
    /// process's `status`) can keep part of the log, which the next checkpoint takes.
    public func checkpoint() {
        try? withDatabase { (db) throws(StoreError) in
            _ = try db.query("PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// Records why a runner waited instead of running (a run condition: battery, a metered
    /// network), for `status`.
    public func recordDeferral(_ reason: String) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            _ = try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('last_deferral', ?)",
                           [.text("\(Int(FileTree.now()))\t\(reason)")])
        }
    }

    /// The last run condition a runner waited for: when (seconds since the epoch) and why.
    public func lastDeferral() throws(StoreError) -> (at: Double, reason: String)? {
        try withDatabase { (db) throws(StoreError) -> (at: Double, reason: String)? in
            guard let text = try db.query("SELECT value FROM meta WHERE key = 'last_deferral'").first?.first?.string,
                  let tab = text.firstIndex(of: "\t"), let at = Double(text[..<tab]) else { return nil }
            return (at, String(text[text.index(after: tab)...]))
        }
    }

    /// Whether scans take hidden entries (names starting with a dot) into the library. Off by
    /// default: they are counted (`StatusCounts.hidden`) and left out.
    public func includesHidden() throws(StoreError) -> Bool {
        try withDatabase { (db) throws(StoreError) in
            try db.query("SELECT value FROM meta WHERE key = 'include_hidden'").first?.first?.string == "1"
        }
    }

    /// Makes every later scan of this store take hidden entries too (`--include-hidden`), for good:
    /// a scan without them would see those rows as removed. The next scan reads every folder.
    /// True when it was not so already.
    @discardableResult
    public func includeHiddenFiles() throws(StoreError) -> Bool {
        try withDatabase { (db) throws(StoreError) -> Bool in
            try db.transaction { () throws(StoreError) -> Bool in
                if try db.query("SELECT value FROM meta WHERE key = 'include_hidden'").first?.first?.string == "1" { return false }
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('include_hidden', '1')")
                try db.run("DELETE FROM scan_directories")
                return true
            }
        }
    }
}
