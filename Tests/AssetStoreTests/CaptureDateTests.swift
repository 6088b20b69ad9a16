import Foundation
import Testing
@testable import AssetStore

/// The capture date is banked with the verdict (store migration 8), so an upload sends it without
/// opening the photo; a row analysed before the migration has none banked until it is read once.
@Suite struct CaptureDateTests {
    static func verdict(takenAt date: String?) -> BankedVerdict {
        var verdict = TemporaryLibrary.verdict()
        verdict.captureDate = date
        return verdict
    }

    @Test func aVerdictBanksTheCaptureDateAndItsAbsence() throws {
        let library = try TemporaryLibrary()
        try library.write("dated.jpg")
        try library.write("undated.jpg")
        let store = try library.open()
        _ = try store.scan()
        #expect(try store.assets().allSatisfy { !$0.captureDateBanked && $0.captureDate == nil })
        for asset in try store.claimUnanalyzed(limit: 10) {
            #expect(try store.bankVerdict(Self.verdict(takenAt: asset.path == "dated.jpg" ? "2021:03:04 05:06:07" : nil), for: asset))
        }
        let dated = try #require(try store.asset(path: "dated.jpg"))
        #expect(dated.captureDateBanked && dated.captureDate == "2021:03:04 05:06:07")
        let undated = try #require(try store.asset(path: "undated.jpg"))
        #expect(undated.captureDateBanked && undated.captureDate == nil)
        // Banked once: a late read changes nothing.
        #expect(try store.bankCaptureDate("1999:01:01 00:00:00", for: dated) == false)
        #expect(try store.asset(path: "dated.jpg")?.captureDate == "2021:03:04 05:06:07")
    }

    @Test func aChangedFileForgetsItsCaptureDate() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", "one")
        let store = try library.open()
        _ = try store.scan()
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        #expect(try store.bankVerdict(Self.verdict(takenAt: "2021:03:04 05:06:07"), for: asset))
        try library.write("a.jpg", "a different photo")
        _ = try store.scan()
        let changed = try #require(try store.asset(path: "a.jpg"))
        #expect(!changed.captureDateBanked && changed.captureDate == nil && changed.state == .discovered)
        // A read for the old version is dropped.
        #expect(try store.bankCaptureDate("2021:03:04 05:06:07", for: asset) == false)
    }

    /// A store made before migration 8: its analysed rows keep their verdicts with no capture
    /// date banked (read once, by the first upload that needs it); companion files, which have
    /// none PhotoDrain reads, are banked as having none.
    @Test func aVersion7StoreMigratesWithItsDatesUnread() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", "one")
        try library.write("a.mov", "video")
        let canonical = try #require(FileTree.realPath(library.libraryPath))
        do {
            let db = try Database(path: library.storePath)
            for version in 0..<7 {
                try db.execute(Schema.migrations[version])
                try db.execute("PRAGMA user_version = \(version + 1)")
            }
            try db.run("INSERT INTO meta(key, value) VALUES ('root', ?)", [.text(canonical)])
            try db.run("INSERT INTO assets(path, size, mtime_ns, discovered_at, analyzed_at, verdict, label) VALUES ('a.jpg', 3, 1, 1, 2, '{}', 'no-faces')")
            try db.run("""
                INSERT INTO assets(path, size, mtime_ns, discovered_at, analyzed_at, verdict, label, companion_of)
                VALUES ('a.mov', 5, 1, 1, 2, '{"label":"companion","companionOf":"a.jpg"}', 'companion', 'a.jpg')
                """)
        }
        let store = try library.open()
        #expect(try Database(path: library.storePath).query("PRAGMA user_version").first?.first?.int == Schema.currentVersion)
        let photo = try #require(try store.asset(path: "a.jpg"))
        #expect(photo.state == .analyzed && photo.verdictJSON == "{}")
        #expect(!photo.captureDateBanked && photo.captureDate == nil)
        let companion = try #require(try store.asset(path: "a.mov"))
        #expect(companion.captureDateBanked && companion.captureDate == nil)
        // The one late read is banked, once.
        #expect(try store.bankCaptureDate("2020:01:02 03:04:05", for: photo))
        #expect(try store.bankCaptureDate(nil, for: photo) == false)
        let read = try #require(try store.asset(path: "a.jpg"))
        #expect(read.captureDateBanked && read.captureDate == "2020:01:02 03:04:05")
    }
}
