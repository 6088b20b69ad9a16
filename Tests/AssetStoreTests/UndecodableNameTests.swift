import Foundation
import Testing
@testable import AssetStore
#if canImport(Glibc)
import Glibc
#endif

/// Issue 15 item 3 (in part): a file or folder whose name is not valid UTF-8 cannot be tracked
/// yet (paths are Strings from the store to the receiver), but it must never vanish silently:
/// the scan reports it, and the store counts and lists it for `status` until it is renamed.
@Suite struct UndecodableNameTests {
    /// Creates `name` (raw bytes) in `folder`: a file, or a folder when `directory`.
    private func create(_ name: [UInt8], in folder: String, directory: Bool = false) throws {
        let path = Array(folder.utf8) + [UInt8(ascii: "/")] + name + [0]
        let made = path.withUnsafeBufferPointer { buffer -> Int32 in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                guard let base = chars.baseAddress else { return -1 }
                if directory { return mkdir(base, 0o755) }
                let fd = creat(base, 0o644)
                if fd >= 0 { close(fd) }
                return fd
            }
        }
        #expect(made >= 0)
    }

    @Test func namesThatAreNotUTF8AreCountedAndListedNotDropped() throws {
        let library = try TemporaryLibrary()
        try library.write("ok.jpg")
        try create(Array("caf".utf8) + [0xE9] + Array(".jpg".utf8), in: library.libraryPath)
        try create(Array("dir".utf8) + [0xFF], in: library.libraryPath, directory: true)
        // Not a photo, but every file of the library is accounted for (issue 16): reported too.
        try create(Array("notes".utf8) + [0xFF] + Array(".txt".utf8), in: library.libraryPath)
        let store = try library.open()
        let report = try store.scan()
        #expect(report.photoCount == 1)
        let expected = [
            ScanProblem(path: "caf\\xE9.jpg", message: "the file name is not valid UTF-8, so PhotoDrain cannot track it; rename it"),
            ScanProblem(path: "dir\\xFF", message: "the folder name is not valid UTF-8, so PhotoDrain cannot track it; rename it"),
            ScanProblem(path: "notes\\xFF.txt", message: "the file name is not valid UTF-8, so PhotoDrain cannot track it; rename it"),
        ]
        #expect(report.problems.sorted { $0.path < $1.path } == expected)
        #expect(try store.counts().skipped == 3)
        #expect(try store.scanProblems() == expected)
        #expect(try store.skippedEntries() == expected)
        // Read-only readers (status) see them too.
        let reader = try AssetStore(root: library.libraryPath, path: library.storePath, readOnly: true)
        #expect(try reader.counts().skipped == 3)
        #expect(try reader.skippedEntries() == expected)

        // Renamed to UTF-8: the next scan takes the photo in and forgets the problem.
        let old = Array(library.libraryPath.utf8) + Array("/caf".utf8) + [0xE9] + Array(".jpg".utf8) + [0]
        let renamed = old.withUnsafeBufferPointer { buffer -> Int32 in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                guard let base = chars.baseAddress else { return -1 }
                return rename(base, library.libraryPath + "/café.jpg")
            }
        }
        #expect(renamed == 0)
        _ = try store.scan()
        #expect(try store.counts().skipped == 2)
        #expect(try store.counts().total == 2)
    }
}
