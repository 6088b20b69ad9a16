import Foundation
import Testing
@testable import AssetStore
#if canImport(Glibc)
import Glibc
#endif

/// A file or folder whose name is not valid UTF-8 is tracked like any other: a
/// row whose `path` shows the bytes escaped and whose `rawPath` keeps them, a file the runners
/// can open (`absolutePath(of:)`), and nothing skipped.
@Suite struct UndecodableNameTests {
    /// Creates `path` (raw bytes): a file holding `content`, or a folder when `directory`.
    private func create(_ path: [UInt8], directory: Bool = false, content: [UInt8] = []) throws {
        let made = (path + [0]).withUnsafeBufferPointer { buffer -> Int32 in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                guard let base = chars.baseAddress else { return -1 }
                if directory { return mkdir(base, 0o755) }
                let fd = creat(base, 0o644)
                if fd >= 0 {
                    _ = content.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    close(fd)
                }
                return fd
            }
        }
        #expect(made >= 0)
    }

    static let cafe: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)
    static let folder: [UInt8] = Array("dir".utf8) + [0xFF]

    @Test func namesThatAreNotUTF8AreTrackedWithTheirBytes() throws {
        let library = try TemporaryLibrary()
        try library.write("ok.jpg")
        let root = Array(library.libraryPath.utf8) + [0x2F]
        try create(root + Self.cafe, content: [1, 2, 3])
        try create(root + Self.folder, directory: true)
        try create(root + Self.folder + Array("/inner.jpg".utf8), content: [4, 5])
        try create(root + Array("notes".utf8) + [0xFF] + Array(".txt".utf8))
        let store = try library.open()
        let report = try store.scan()
        #expect(report.problems.isEmpty)
        #expect(report.photoCount == 4)
        #expect(try store.counts().skipped == 0)
        #expect(try store.counts().total == 4)
        let rows = try store.assets(in: .discovered).sorted { $0.path < $1.path }
        #expect(rows.map(\.path) == ["caf\\xE9.jpg", "dir\\xFF/inner.jpg", "notes\\xFF.txt", "ok.jpg"])
        #expect(rows.map(\.rawPath) == [Self.cafe, Self.folder + Array("/inner.jpg".utf8),
                                         Array("notes".utf8) + [0xFF] + Array(".txt".utf8), nil])
        // The runners open the file through the path the store gives, and it is the file.
        let cafe = try #require(rows.first)
        #expect(store.fileMatches(cafe))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.absolutePath(of: cafe))) == Data([1, 2, 3]))
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.absolutePath(of: rows[1]))) == Data([4, 5]))
        // A rescan sees the same rows (the alias folder is hidden, the rows unchanged).
        let again = try store.scan()
        #expect(again.changes.added.isEmpty && again.changes.modified.isEmpty && again.changes.removed.isEmpty)
        #expect(try store.counts().total == 4)
        // Read-only readers (status) see them as rows too.
        let reader = try AssetStore(root: library.libraryPath, path: library.storePath, readOnly: true)
        #expect(try reader.counts().total == 4)
        #expect(try reader.counts().skipped == 0)

        // Renamed to UTF-8: the old row goes, a new one comes.
        let renamed = (root + Self.cafe + [0]).withUnsafeBufferPointer { buffer -> Int32 in
            buffer.withMemoryRebound(to: CChar.self) { rename($0.baseAddress!, library.libraryPath + "/café.jpg") }
        }
        #expect(renamed == 0)
        let afterRename = try store.scan()
        #expect(afterRename.changes.removed == ["caf\\xE9.jpg"])
        #expect(afterRename.changes.added == ["café.jpg"])
        #expect(!store.fileMatches(cafe))
    }

    /// A real file whose name is the escaped form of another's bytes keeps the row; the other is
    /// reported, never dropped silently.
    @Test func anEscapedNameThatClashesWithARealOneIsReported() throws {
        let library = try TemporaryLibrary()
        try library.write("caf\\xE9.jpg")
        try create(Array(library.libraryPath.utf8) + [0x2F] + Self.cafe)
        let store = try library.open()
        let report = try store.scan()
        #expect(report.photoCount == 1)
        #expect(try store.assets(in: .discovered).map(\.rawPath) == [nil])
        #expect(report.problems.map(\.path) == ["caf\\xE9.jpg"])
        #expect(report.problems.first?.message.contains("not valid UTF-8") == true)
        #expect(try store.counts().skipped == 1)
    }
}
