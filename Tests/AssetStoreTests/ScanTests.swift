import Foundation
import Testing
@testable import AssetStore

@Suite struct ScanTests {
    @Test func everyFileIsARowButHiddenOnes() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        try library.write("trip/b.JPEG")
        try library.write("trip/deep/c.png")
        try library.write(".hidden.jpg")
        try library.write(".cache/d.jpg")
        try library.write("notes.txt")
        try library.write("movie.mov")
        let store = try library.open()
        let report = try store.scan()
        #expect(report.photoCount == 5)
        #expect(report.changes.added == ["a.jpg", "movie.mov", "notes.txt", "trip/b.JPEG", "trip/deep/c.png"])
        #expect(report.problems.isEmpty)
        let rows = try store.assets()
        #expect(rows.map(\.path) == ["a.jpg", "movie.mov", "notes.txt", "trip/b.JPEG", "trip/deep/c.png"])
        #expect(rows.allSatisfy { $0.state == .discovered && $0.discoveredAt > 0 })
        #expect(try store.skippedEntries().isEmpty)
    }

    @Test func heifAndWebPPhotosAreScanned() throws {
        let library = try TemporaryLibrary()
        try library.write("IMG_0001.HEIC")
        try library.write("b.heif")
        try library.write("c.avif")
        try library.write("d.hif")
        try library.write("e.webp")
        try library.write("IMG_0001.MOV")
        let report = try library.open().scan()
        #expect(report.changes.added == ["IMG_0001.HEIC", "IMG_0001.MOV", "b.heif", "c.avif", "d.hif", "e.webp"])
    }

    /// A store kept inside its own library is not part of the library: not the database, nor the
    /// WAL and shared-memory files SQLite keeps beside it.
    @Test func aStoreInsideTheLibraryIsNotCounted() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let store = try AssetStore(root: library.libraryPath, path: library.libraryPath + "/catalogue.sqlite")
        let first = try store.scan()
        _ = try store.scan()
        let files = try FileManager.default.contentsOfDirectory(atPath: library.libraryPath)
        #expect(files.contains("catalogue.sqlite") && files.contains("catalogue.sqlite-wal"), "\(files)")
        #expect(first.changes.added == ["a.jpg"])
        #expect(try store.assets().map(\.path) == ["a.jpg"])
        #expect(try store.skippedEntries().isEmpty)
    }

    /// What is not a regular file inside the library is not a row, but it does not vanish: the
    /// scan reports it and the store keeps the list, with why, until a scan no longer finds it.
    @Test func entriesThatAreNotFilesAreListedWithWhy() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let lib = URL(fileURLWithPath: library.libraryPath)
        let outside = library.root.appendingPathComponent("outside.jpg")
        try Data("x".utf8).write(to: outside)
        try FileManager.default.createSymbolicLink(at: lib.appendingPathComponent("escape.jpg"), withDestinationURL: outside)
        try FileManager.default.createSymbolicLink(at: lib.appendingPathComponent("gone.jpg"), withDestinationURL: lib.appendingPathComponent("nothing"))
        #expect(mkfifo(lib.appendingPathComponent("pipe").path, 0o600) == 0)
        let store = try library.open()
        let report = try store.scan()
        #expect(report.changes.added == ["a.jpg"])
        #expect(report.problems.map(\.path) == ["escape.jpg", "gone.jpg", "pipe"])
        let skipped = try store.skippedEntries()
        #expect(skipped == report.problems)
        #expect(skipped[0].message.hasSuffix("outside the library") && skipped[0].message.contains(outside.lastPathComponent))
        #expect(skipped[1].message == "a dangling symbolic link")
        #expect(skipped[2].message == "a FIFO, not a regular file")
        for name in ["escape.jpg", "gone.jpg", "pipe"] { try library.remove(name) }
        _ = try store.scan()
        #expect(try store.skippedEntries().isEmpty)
    }

    @Test func symlinksAreFollowedOnlyInsideTheRoot() throws {
        let library = try TemporaryLibrary()
        try library.write("real/a.jpg")
        let outside = library.root.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: outside.appendingPathComponent("secret.jpg"))
        let lib = URL(fileURLWithPath: library.libraryPath)
        try FileManager.default.createSymbolicLink(at: lib.appendingPathComponent("escape"), withDestinationURL: outside)
        try FileManager.default.createSymbolicLink(at: lib.appendingPathComponent("alias"), withDestinationURL: lib.appendingPathComponent("real"))
        try FileManager.default.createSymbolicLink(at: lib.appendingPathComponent("real/loop"), withDestinationURL: lib)
        let report = try library.open().scan()
        // The loop and the alias lead back to folders already walked; the escape leads out.
        #expect(report.changes.added == ["real/a.jpg"] || report.changes.added == ["alias/a.jpg"])
        #expect(!report.changes.added.contains { $0.contains("secret") })
    }

    @Test func modifiedPhotoLosesVerdictAndUploadState() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", "one")
        try library.write("b.jpg", "two")
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) {
            #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: asset))
        }
        #expect(try store.counts().analyzed == 2)
        try library.write("a.jpg", "one, edited and longer")
        let report = try store.scan()
        #expect(report.changes.modified == ["a.jpg"])
        let a = try #require(try store.asset(path: "a.jpg"))
        #expect(a.state == .discovered && a.verdictJSON == nil && a.analyzedAt == nil && a.generation == 1)
        #expect(try store.asset(path: "b.jpg")?.state == .analyzed)
    }

    @Test func removedAndAddedFilesBetweenScans() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        try library.write("b.jpg")
        let store = try library.open()
        let first = try store.scan()
        try library.remove("a.jpg")
        try library.write("c.png")
        let second = try store.scan()
        #expect(second.changes.removed == ["a.jpg"])
        #expect(second.changes.added == ["c.png"])
        #expect(try store.assets().map(\.path) == ["b.jpg", "c.png"])
        let since = try store.changes(since: first.changes.token)
        #expect(since.added == ["c.png"] && since.removed == ["a.jpg"] && since.modified.isEmpty)
        #expect(since.token == second.changes.token)
        #expect(try store.changes(since: second.changes.token).isEmpty)
        let third = try store.scan()
        #expect(third.changes.isEmpty && third.changes.token == second.changes.token)
    }

    @Test func tokenOlderThanHistoryExpires() throws {
        let library = try TemporaryLibrary()
        let store = try library.open(historyLimit: 3)
        let start = try store.currentToken()
        for name in ["a", "b", "c", "d", "e"] {
            try library.write("\(name).jpg")
            _ = try store.scan()
        }
        let error = try #require(throws: StoreError.self) { try store.changes(since: start) }
        #expect(error.code == .tokenExpired)
        // A recent token still works.
        let recent = ChangeToken(sequence: try store.currentToken().sequence - 2)
        #expect(try store.changes(since: recent).added == ["d.jpg", "e.jpg"])
        #expect(ChangeToken("ct-42")?.sequence == 42 && ChangeToken("42") == nil)
    }

    @Test func missingRootIsAClearError() throws {
        let error = try #require(throws: StoreError.self) {
            try AssetStore(root: "/nonexistent/photos", path: "/tmp/unused.sqlite")
        }
        #expect(error.code == .unreadableRoot)
    }
}
