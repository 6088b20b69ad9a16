import Foundation
import Testing
@testable import AssetStore

/// A damaged store is reported in one line a person can act on, with a code of
/// its own, and never with the SQL text.
@Suite struct DamagedStoreTests {
    @Test(arguments: ["assets", "meta"])
    func aDamagedTableIsOneLineWithoutSQL(table: String) throws {
        let library = try TemporaryLibrary()
        for name in ["a.jpg", "b.jpg", "c.jpg"] { try library.write(name) }
        do {
            let store = try library.open()
            _ = try store.scan()
        }
        let db = try Database(path: library.storePath)
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let page = try #require(try db.query("SELECT rootpage FROM sqlite_master WHERE name = ?", [.text(table)]).first?.first?.int)
        let pageSize = try #require(try db.query("PRAGMA page_size").first?.first?.int)
        let file = try #require(FileHandle(forUpdatingAtPath: library.storePath))
        try file.seek(toOffset: UInt64((page - 1) * pageSize))
        try file.write(contentsOf: Data((0..<pageSize).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }))
        try file.close()
        do {
            let store = try library.open()
            _ = try store.counts()
            Issue.record("a damaged \(table) table was read without an error")
        } catch let error as StoreError {
            #expect(error.code == .corrupted)
            #expect(error.description.contains(library.storePath))
            #expect(!error.description.contains("\n"))
            #expect(!error.description.uppercased().contains("SELECT"))
            #expect(!error.description.uppercased().contains("PRAGMA"))
        }
    }

    @Test func aFileThatIsNotADatabaseIsCorrupted() throws {
        let library = try TemporaryLibrary()
        try Data(repeating: 0x41, count: 8_192).write(to: URL(fileURLWithPath: library.storePath))
        #expect(throws: StoreError.self) { try library.open() }
        do {
            _ = try library.open()
        } catch let error as StoreError {
            #expect(error.code == .corrupted)
            #expect(!error.description.contains("PRAGMA"))
        }
    }

    /// A store opened for reading writes nothing: a store another user owns, or on a read-only
    /// disk, can be read by `status` and `verdicts` (the CLI test runs that as another user).
    @Test func aStoreOpenedReadOnlyReadsAndRefusesWrites() throws {
        let library = try TemporaryLibrary()
        for name in ["a.jpg", "b.jpg"] { try library.write(name) }
        do {
            let store = try library.open()
            _ = try store.scan()
        }
        let reader = try AssetStore(root: library.libraryPath, path: library.storePath, readOnly: true)
        #expect(try reader.counts().total == 2)
        #expect(try reader.assets().map(\.path) == ["a.jpg", "b.jpg"])
        #expect(throws: StoreError.self) { try reader.scan() }
    }
}
