import Foundation
import Synchronization
import Testing
@testable import AssetStore
#if canImport(Glibc)
import Glibc
#endif

/// A file's identity includes its status-change time, inode and device (store migration 10): a
/// rewrite that keeps the size and sets the modification time back is found, hashed again and
/// redone; a change of mode alone is hashed again and costs nothing more.
@Suite struct FileStampTests {
    /// A hasher standing in for SHA-256 (AssetStoreTests has no SystemSupport): the file's text,
    /// which tells contents apart as a digest does. It counts its calls.
    final class Hasher: Sendable {
        let calls = Mutex(0)
        func hash(_ path: String) -> String? {
            calls.withLock { $0 += 1 }
            return (try? String(contentsOfFile: path, encoding: .utf8)).map { "digest of " + $0 }
        }
    }

    /// One photo, analysed with the digest of its bytes and uploaded.
    private func uploadedPhoto() throws -> (TemporaryLibrary, AssetStore, String) {
        let library = try TemporaryLibrary()
        let path = try library.write("a.jpg", "photo-1")
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) {
            let verdict = BankedVerdict(json: "{}", label: "faces", faceCount: 1, score: 0.9, sha256: "digest of photo-1")
            #expect(try store.bankVerdict(verdict, for: asset))
        }
        try store.useDestination("http://127.0.0.1:8080/uploads", allowChange: false)
        for asset in try store.claimForUpload(limit: 10) { #expect(try store.recordUploaded(asset, serverID: "id")) }
        try store.releaseClaims()
        return (library, store, path)
    }

    /// The file's modification time, to the nanosecond.
    private func modificationTime(_ path: String) -> timespec {
        var info = stat()
        _ = stat(path, &info)
        return info.st_mtim
    }

    /// Sets the file's modification time back, as `touch -r` does.
    private func setModificationTime(_ path: String, _ time: timespec) {
        var times = [time, time]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    @Test func aRewriteThatKeepsSizeAndTimeIsFoundByItsChangeTime() throws {
        let (library, store, path) = try uploadedPhoto()
        defer { withExtendedLifetime(library) {} }
        let before = try #require(try store.asset(path: "a.jpg"))
        let time = modificationTime(path)
        try Data("photo-2".utf8).write(to: URL(fileURLWithPath: path))
        setModificationTime(path, time)
        #expect(!store.fileMatches(before), "the rewritten file passed as the version analysed")

        let hasher = Hasher()
        let report = try store.scan(full: true, rehash: hasher.hash)
        #expect(report.changes.modified == ["a.jpg"])
        #expect(hasher.calls.withLock { $0 } == 1)
        let after = try #require(try store.asset(path: "a.jpg"))
        #expect(after.state == .discovered && after.generation == before.generation + 1 && after.sha256 == nil)
        #expect(try store.counts().uploaded == 0)
    }

    /// The periodic full walk (the last one older than `fullWalkAfter`) finds it too.
    @Test func thePeriodicFullWalkFindsTheRewrite() throws {
        let (library, store, path) = try uploadedPhoto()
        defer { withExtendedLifetime(library) {} }
        let time = modificationTime(path)
        try Data("photo-2".utf8).write(to: URL(fileURLWithPath: path))
        setModificationTime(path, time)
        let hasher = Hasher()
        let walked = try store.scan(fullWalkAfter: 0, rehash: hasher.hash)
        #expect(walked.fullWalk && walked.changes.modified == ["a.jpg"])
    }

    @Test func aChangeOfModeAloneIsHashedOnceAndIsNoNewWork() throws {
        let (library, store, path) = try uploadedPhoto()
        defer { withExtendedLifetime(library) {} }
        let before = try #require(try store.asset(path: "a.jpg"))
        #expect(chmod(path, 0o600) == 0)
        #expect(!store.fileMatches(before), "a file whose stamp changed is not known to be the version analysed before it is hashed")

        let hasher = Hasher()
        let report = try store.scan(full: true, rehash: hasher.hash)
        #expect(report.changes.modified.isEmpty && report.changes.added.isEmpty)
        #expect(hasher.calls.withLock { $0 } == 1)
        let after = try #require(try store.asset(path: "a.jpg"))
        #expect(after == before, "the row changed: \(after)")
        #expect(store.fileMatches(after))
        #expect(try store.claimUnanalyzed(limit: 10).isEmpty && (try store.claimForUpload(limit: 10)).isEmpty)
        // The new stamp is recorded: the next scan hashes nothing.
        _ = try store.scan(full: true, rehash: hasher.hash)
        #expect(hasher.calls.withLock { $0 } == 1)
    }

    /// A file whose name is not UTF-8 is hashed through its alias (`absolutePath(of:)`), like
    /// any other: a chmod of it is no new work either.
    @Test func aNameThatIsNotUTF8IsHashedThroughItsAlias() throws {
        let library = try TemporaryLibrary()
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)
        let path = Array(library.libraryPath.utf8) + [0x2F] + name + [0]
        let fd = path.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { creat($0.baseAddress!, 0o644) } }
        #expect(fd >= 0)
        _ = Array("photo-1".utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) {
            #expect(try store.bankVerdict(BankedVerdict(json: "{}", label: "faces", faceCount: 1, score: 0.9, sha256: "digest of photo-1"), for: asset))
        }
        #expect(path.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { chmod($0.baseAddress!, 0o600) } } == 0)
        let hasher = Hasher()
        #expect(try store.scan(full: true, rehash: hasher.hash).changes.modified.isEmpty)
        #expect(hasher.calls.withLock { $0 } == 1)
        #expect(try store.counts().analyzed == 1)
    }

    /// A scan that cannot hash (no hasher) leaves such a file as it is and reads its folder next
    /// time, for a scan that can.
    @Test func aScanWithoutAHasherLeavesARestampedFileForOneWithIt() throws {
        let (library, store, path) = try uploadedPhoto()
        defer { withExtendedLifetime(library) {} }
        let time = modificationTime(path)
        try Data("photo-2".utf8).write(to: URL(fileURLWithPath: path))
        setModificationTime(path, time)
        // The folder's own time well before the scan, so nothing but the mark makes the next
        // incremental scan read it.
        setModificationTime(library.libraryPath, timespec(tv_sec: time.tv_sec - 3600, tv_nsec: 0))
        #expect(try store.scan(full: true).changes.modified.isEmpty)
        #expect(try store.counts().uploaded == 1)
        let report = try store.scan(rehash: Hasher().hash)
        #expect(report.changes.modified == ["a.jpg"])
        #expect(report.directoriesRead == 1)
    }

    /// Rows from before stamps were kept have none: the next scan records theirs without hashing
    /// (the upgrade rehashes nothing); from then on a change of stamp is looked into.
    @Test func aRowFromBeforeStampsGetsOneWithoutARehash() throws {
        let (library, store, path) = try uploadedPhoto()
        defer { withExtendedLifetime(library) {} }
        _ = try Database(path: library.storePath).run("UPDATE assets SET ctime_ns = NULL, inode = NULL, device = NULL")
        #expect(chmod(path, 0o600) == 0)
        let hasher = Hasher()
        #expect(try store.scan(full: true, rehash: hasher.hash).changes.modified.isEmpty)
        #expect(hasher.calls.withLock { $0 } == 0)
        #expect(try store.counts().uploaded == 1)
        #expect(chmod(path, 0o644) == 0)
        #expect(try store.scan(full: true, rehash: hasher.hash).changes.modified.isEmpty)
        #expect(hasher.calls.withLock { $0 } == 1)
    }
}
