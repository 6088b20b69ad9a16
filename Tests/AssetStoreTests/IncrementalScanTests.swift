import Foundation
import Testing
@testable import AssetStore
#if canImport(Glibc)
import Glibc
#endif

/// Scans read only the folders whose identity or modification time changed
/// since the last scan; a full walk (`scan(full: true)`, `--rescan`, or a last full walk older
/// than `AssetStore.fullWalkInterval`) reads them all and finds files rewritten in place.
@Suite struct IncrementalScanTests {
    /// Sets the modification time of every folder in the library (the root too) to one fixed
    /// time in the past, so the scan that follows trusts it (a folder changed within
    /// `FolderRecord.racyMargin` of a scan is read again by the next). Walks names as bytes, so
    /// folders that are not UTF-8 too.
    private func backdateFolders(_ library: TemporaryLibrary) {
        var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
        func visit(_ path: [UInt8]) {
            guard let dir = Self.withCPath(path, { opendir($0) }) else { return }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
                guard name != Array(".".utf8), name != Array("..".utf8), entry.pointee.d_type == UInt8(DT_DIR) else { continue }
                visit(path + [0x2F] + name)
            }
            _ = Self.withCPath(path) { utimensat(AT_FDCWD, $0, &times, 0) }
        }
        visit(Array(library.libraryPath.utf8))
    }

    private static func withCPath<R>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        (path + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) } }
    }

    /// Rewrites a file's bytes in place: same name, same inode, no rename, so its folder's
    /// modification time stays as it was.
    private func rewriteInPlace(_ library: TemporaryLibrary, _ relative: String, _ contents: String) throws {
        let handle = try #require(FileHandle(forWritingAtPath: library.libraryPath + "/" + relative))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(contents.utf8))
        try handle.close()
    }

    /// A library of four folders, scanned once (a full walk) with its folders' times trusted.
    private func scannedLibrary() throws -> (TemporaryLibrary, AssetStore) {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        try library.write("trip/b.jpg")
        try library.write("trip/deep/c.jpg")
        try library.write("home/d.jpg")
        backdateFolders(library)
        let store = try library.open()
        let first = try store.scan()
        #expect(first.fullWalk && first.directoriesRead == 4 && first.directoriesUnchanged == 0, "\(first)")
        #expect(first.changes.added == ["a.jpg", "home/d.jpg", "trip/b.jpg", "trip/deep/c.jpg"])
        return (library, store)
    }

    @Test func unchangedFoldersAreNotRead() throws {
        let (library, store) = try scannedLibrary()
        defer { withExtendedLifetime(library) {} }
        let again = try store.scan()
        #expect(!again.fullWalk)
        #expect(again.directoriesRead == 0 && again.directoriesUnchanged == 4)
        #expect(again.changes.isEmpty && again.photoCount == 4)
        #expect(try store.assets().map(\.path) == ["a.jpg", "home/d.jpg", "trip/b.jpg", "trip/deep/c.jpg"])
        let state = try store.scanState()
        #expect(state.token == again.changes.token)
        #expect(state.fullWalkAt != nil && state.scannedAt.map { $0 > state.fullWalkAt! } == true)
    }

    @Test func aFileAddedToASubfolderIsFoundReadingOnlyThatFolder() throws {
        let (library, store) = try scannedLibrary()
        try library.write("trip/deep/e.jpg")
        let report = try store.scan()
        #expect(report.changes.added == ["trip/deep/e.jpg"])
        #expect(report.changes.modified.isEmpty && report.changes.removed.isEmpty)
        #expect(report.directoriesRead == 1 && report.directoriesUnchanged == 3)
        #expect(report.photoCount == 5)
    }

    @Test func aRemovedFileIsFound() throws {
        let (library, store) = try scannedLibrary()
        try library.remove("trip/b.jpg")
        let report = try store.scan()
        #expect(report.changes.removed == ["trip/b.jpg"])
        #expect(report.changes.added.isEmpty)
        #expect(report.directoriesRead == 1)
        #expect(try store.assets().map(\.path) == ["a.jpg", "home/d.jpg", "trip/deep/c.jpg"])
    }

    /// A renamed folder keeps its own time; its parent's changes. The parent is read, the folder
    /// under its new name has no record and is read with everything under it.
    @Test func aRenamedFolderIsFound() throws {
        let (library, store) = try scannedLibrary()
        try FileManager.default.moveItem(atPath: library.libraryPath + "/trip", toPath: library.libraryPath + "/journey")
        let report = try store.scan()
        #expect(report.changes.added == ["journey/b.jpg", "journey/deep/c.jpg"])
        #expect(report.changes.removed == ["trip/b.jpg", "trip/deep/c.jpg"])
        #expect(report.directoriesRead == 3 && report.directoriesUnchanged == 1)
        #expect(try store.assets().map(\.path) == ["a.jpg", "home/d.jpg", "journey/b.jpg", "journey/deep/c.jpg"])
    }

    /// The honest limit: a file rewritten in place leaves its folder's time alone, so an
    /// incremental scan does not see it; a full walk does, asked for or because the last one is
    /// older than `fullWalkInterval`.
    @Test func aFileRewrittenInPlaceIsFoundByAFullWalk() throws {
        let (library, store) = try scannedLibrary()
        try rewriteInPlace(library, "trip/b.jpg", "a longer photo than before")
        let incremental = try store.scan()
        #expect(incremental.changes.isEmpty && incremental.directoriesRead == 0)
        let full = try store.scan(full: true)
        #expect(full.fullWalk && full.directoriesRead == 4)
        #expect(full.changes.modified == ["trip/b.jpg"])

        try rewriteInPlace(library, "home/d.jpg", "another longer photo")
        #expect(try store.scan().changes.isEmpty)
        // The last full walk was a day and a minute ago: the next scan walks in full by itself.
        _ = try store.withDatabase { (db) throws(StoreError) in
            try db.run("UPDATE meta SET value = ? WHERE key = 'last_full_walk_at'", [.text(String(FileTree.now() - AssetStore.fullWalkInterval - 60))])
        }
        let due = try store.scan()
        #expect(due.fullWalk && due.changes.modified == ["home/d.jpg"])
        #expect(!(try store.scan().fullWalk))
    }

    /// With a quiet period, a file that changed just now (it may be half copied) is left for a
    /// later scan: a new one gets no row, a known one keeps its row, and its folder is read again.
    @Test func filesChangedWithinTheQuietPeriodAreLeftForLater() throws {
        let (library, store) = try scannedLibrary()
        try library.write("trip/deep/copying.jpg", "half a photo")
        try rewriteInPlace(library, "home/d.jpg", "being saved over")
        try store.invalidateFolder(of: try #require(try store.asset(path: "home/d.jpg")))
        let early = try store.scan(quietPeriod: 60)
        #expect(early.settling == ["home/d.jpg", "trip/deep/copying.jpg"])
        #expect(early.changes.isEmpty && early.photoCount == 4)
        #expect(try store.asset(path: "trip/deep/copying.jpg") == nil)
        #expect(try store.asset(path: "home/d.jpg")?.size == 5)
        // Settled (no quiet period asked): both folders are read again and both files taken.
        let later = try store.scan()
        #expect(later.settling.isEmpty && later.directoriesRead == 2)
        #expect(later.changes.added == ["trip/deep/copying.jpg"] && later.changes.modified == ["home/d.jpg"])
    }

    /// A runner that finds a file no longer matching its row (an upload saw it change) marks its
    /// folder, and the next incremental scan reads that folder and finds the rewrite.
    @Test func anInvalidatedFolderIsReadByTheNextScan() throws {
        let (library, store) = try scannedLibrary()
        try rewriteInPlace(library, "trip/b.jpg", "edited while it was being uploaded")
        let row = try #require(try store.asset(path: "trip/b.jpg"))
        #expect(!store.fileMatches(row))
        try store.invalidateFolder(of: row)
        let report = try store.scan()
        #expect(!report.fullWalk && report.directoriesRead == 1)
        #expect(report.changes.modified == ["trip/b.jpg"])
    }

    /// Entries skipped in a folder that is not read stay listed, with why; a folder holding links
    /// is read on every scan (a link's target changes without the folder's times moving), and a
    /// link to a folder inside the library is followed on every scan.
    @Test func skippedEntriesAndLinkedFoldersSurviveAnUnreadFolder() throws {
        let library = try TemporaryLibrary()
        try library.write("real/a.jpg")
        try library.write("other/b.jpg")
        let lib = URL(fileURLWithPath: library.libraryPath)
        #expect(mkfifo(lib.appendingPathComponent("other/pipe").path, 0o600) == 0)
        try FileManager.default.createSymbolicLink(at: lib.appendingPathComponent("other/gone.jpg"), withDestinationURL: lib.appendingPathComponent("nothing"))
        try FileManager.default.createSymbolicLink(at: lib.appendingPathComponent("other/linked"), withDestinationURL: lib.appendingPathComponent("real"))
        backdateFolders(library)
        let store = try library.open()
        let first = try store.scan()
        #expect(first.problems.map(\.path) == ["other/gone.jpg", "other/pipe"])
        let photos = try store.assets().map(\.path)
        #expect(photos.count == 2)
        let again = try store.scan()
        #expect(again.directoriesRead == 1 && again.directoriesUnchanged == 2, "\(again)")  // `other`, which holds links
        #expect(again.problems == first.problems)
        #expect(try store.skippedEntries() == first.problems)
        #expect(again.changes.isEmpty)
        #expect(try store.assets().map(\.path) == photos)
        // A file added behind the link (in whichever folder the walk reached first) is found.
        try library.write("real/c.jpg")
        let added = try store.scan()
        #expect(added.changes.added.count == 1 && added.changes.added[0].hasSuffix("/c.jpg"))
        #expect(added.directoriesRead == 2)
    }

    /// A link's target can go or change while the folder holding the link keeps its times: that
    /// folder is read on every scan, so a row behind a link whose target was deleted goes too.
    @Test func aLinkWhoseTargetIsDeletedLosesItsRow() throws {
        let library = try TemporaryLibrary()
        try library.write("2019/a.jpg")
        try library.write("favourites/b.jpg")
        let lib = URL(fileURLWithPath: library.libraryPath)
        try FileManager.default.createSymbolicLink(atPath: lib.appendingPathComponent("favourites/fav.jpg").path, withDestinationPath: "../2019/a.jpg")
        backdateFolders(library)
        let store = try library.open()
        _ = try store.scan()
        #expect(try store.asset(path: "favourites/fav.jpg") != nil)
        try FileManager.default.removeItem(atPath: lib.appendingPathComponent("2019/a.jpg").path)
        let report = try store.scan()
        #expect(!report.fullWalk)
        #expect(report.changes.removed == ["2019/a.jpg", "favourites/fav.jpg"], "\(report.changes)")
        #expect(report.problems.map(\.path) == ["favourites/fav.jpg"])
    }

    /// A file whose time is ahead of the clock (a camera's wrong clock kept by `cp -p`) is not a
    /// copy in progress: the quiet period does not hold it back (drain would wait for it forever).
    @Test func aFileDatedInTheFutureIsNotLeftForLater() throws {
        let (library, store) = try scannedLibrary()
        try library.write("trip/from-the-future.jpg", "a photo")
        var times = [timespec(tv_sec: 4_102_444_800, tv_nsec: 0), timespec(tv_sec: 4_102_444_800, tv_nsec: 0)]  // 2100
        #expect(utimensat(AT_FDCWD, library.libraryPath + "/trip/from-the-future.jpg", &times, 0) == 0)
        let report = try store.scan(quietPeriod: 60)
        #expect(report.settling.isEmpty, "\(report.settling)")
        #expect(report.changes.added == ["trip/from-the-future.jpg"])
    }

    /// A folder invalidated while a scan is under way (an upload found a file changed) stays
    /// marked when that scan saves its record: it may have read the folder before the change.
    @Test func anInvalidationDuringAScanOutlivesIt() throws {
        let (library, store) = try scannedLibrary()
        let started = FileTree.now()
        let walk = try FileTree.walk(root: store.root, excluding: store.ownFiles) { _ in nil }  // the scan reads...
        try rewriteInPlace(library, "trip/b.jpg", "changed after the scan read its folder")
        try store.invalidateFolder(of: try #require(try store.asset(path: "trip/b.jpg")))  // ...then is told
        try store.withDatabase { (db) throws(StoreError) in try FolderRecord.save(walk, started: started, db) }
        let next = try store.scan()
        #expect(!next.fullWalk)
        #expect(next.changes.modified == ["trip/b.jpg"], "\(next.changes)")
    }

    /// Names that are not UTF-8 are walked as bytes by an incremental scan too: a folder so
    /// named is skipped while unchanged (its rows kept with their bytes) and read when it changes.
    @Test func aNameThatIsNotUTF8IsTrackedIncrementally() throws {
        let library = try TemporaryLibrary()
        let folder: [UInt8] = Array("dir".utf8) + [0xFF]
        let root = Array(library.libraryPath.utf8) + [0x2F]
        #expect(Self.withCPath(root + folder) { mkdir($0, 0o755) } == 0)
        #expect(Self.withCPath(root + folder + Array("/inner.jpg".utf8)) { creat($0, 0o644) } >= 0)
        backdateFolders(library)
        let store = try library.open()
        #expect(try store.scan().changes.added == ["dir\\xFF/inner.jpg"])
        let unchanged = try store.scan()
        #expect(unchanged.changes.isEmpty && unchanged.directoriesRead == 0 && unchanged.problems.isEmpty)
        #expect(try store.asset(path: "dir\\xFF/inner.jpg")?.rawPath == folder + Array("/inner.jpg".utf8))
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)
        #expect(Self.withCPath(root + folder + [0x2F] + name) { creat($0, 0o644) } >= 0)
        let added = try store.scan()
        #expect(added.changes.added == ["dir\\xFF/caf\\xE9.jpg"])
        #expect(added.directoriesRead == 1)
        let row = try #require(try store.asset(path: "dir\\xFF/caf\\xE9.jpg"))
        #expect(row.rawPath == folder + [0x2F] + name)
        #expect(store.fileMatches(row))
    }

    /// A folder whose modification time is set back after a change (`rsync -t`, `touch -d`)
    /// still has a new status-change time: it is read.
    @Test func aFolderWhoseTimeWasSetBackIsStillRead() throws {
        let (library, store) = try scannedLibrary()
        try library.write("trip/deep/e.jpg")
        var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, library.libraryPath + "/trip/deep", &times, 0) == 0)
        let report = try store.scan()
        #expect(report.changes.added == ["trip/deep/e.jpg"])
        #expect(report.directoriesRead == 1)
    }

    /// A rescan while runners work (drain scans every few seconds) leaves rows whose files did
    /// not change as they are: a photo claimed for analysis keeps its claim, one being uploaded
    /// keeps its job, even when their folder is read again.
    @Test func aScanLeavesClaimsAndJobsInFlightAlone() throws {
        let (library, store) = try scannedLibrary()
        let claimed = try #require(try store.claimUnanalyzed(limit: 1).first)
        let uploading = try #require(try store.claimUnanalyzed(limit: 1).first)
        #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: uploading))
        let asset = try #require(try store.claimForUpload(limit: 1).first)
        _ = try store.createJob(for: asset, destination: "http://receiver.invalid/uploads", inflightLimit: .max)
        let job = try #require(try store.claimJobsToPerform(limit: 1).first)
        for path in [claimed.path, asset.path] {
            try library.write((path as NSString).deletingLastPathComponent + "/new-beside-\((path as NSString).lastPathComponent)")
        }
        let report = try store.scan(full: true)
        #expect(report.changes.added.count == 2 && report.changes.modified.isEmpty && report.changes.removed.isEmpty)
        // The claim holds: no other claimer gets the photo, and the job is still the agent's.
        let other = try AssetStore(root: library.libraryPath, path: library.storePath)
        #expect(!(try other.claimUnanalyzed(limit: 10).map(\.id)).contains(claimed.id))
        #expect(try store.job(id: job.id)?.state == .pending)
        #expect(try store.asset(for: job)?.generation == asset.generation)
        #expect(try store.redundantJobs().isEmpty)
    }

    /// A folder changed just before the scan that read it may change again within the same tick
    /// of the file system's clock: its time is not trusted, and the next scan reads it again.
    @Test func aFolderChangedJustBeforeAScanIsReadAgain() throws {
        let (library, store) = try scannedLibrary()
        try library.write("trip/deep/e.jpg")
        _ = try store.scan()
        let next = try store.scan()
        #expect(next.directoriesRead == 1 && next.changes.isEmpty)
    }

    /// A store made by the previous PhotoDrain (schema 5) is migrated: its rows are kept, the
    /// first scan walks in full and records the folders, the next reads none.
    @Test func aVersion5StoreMigratesAndItsRowsAreKept() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", "one")
        let canonical = try #require(FileTree.realPath(library.libraryPath))
        let state = try #require(FileTree.fileState(canonical + "/a.jpg"))
        do {
            let db = try Database(path: library.storePath)
            for version in 0..<5 {
                try db.execute(Schema.migrations[version])
                try db.execute("PRAGMA user_version = \(version + 1)")
            }
            try db.run("INSERT INTO meta(key, value) VALUES ('root', ?)", [.text(canonical)])
            try db.run("INSERT INTO assets(path, size, mtime_ns, discovered_at, analyzed_at, verdict, label) VALUES ('a.jpg', ?, ?, 1, 2, '{}', 'no-faces')",
                       [.integer(Int64(state.size)), .integer(state.mtimeNanoseconds)])
        }
        try library.write("b.jpg", "two")
        backdateFolders(library)
        let store = try library.open()
        #expect(try Database(path: library.storePath).query("PRAGMA user_version").first?.first?.int == Schema.currentVersion)
        let first = try store.scan()
        #expect(first.fullWalk && first.changes.added == ["b.jpg"] && first.changes.modified.isEmpty)
        #expect(try store.asset(path: "a.jpg")?.state == .analyzed)
        let second = try store.scan()
        #expect(!second.fullWalk && second.directoriesRead == 0 && second.changes.isEmpty)
    }
}
