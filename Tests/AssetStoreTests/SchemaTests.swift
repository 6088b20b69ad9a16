import Foundation
import Testing
@testable import AssetStore

@Suite struct SchemaTests {
    @Test func migratesFromEveryEarlierVersion() throws {
        // Each earlier version, reached by running the migrations before it, upgrades to current.
        for start in 0..<Schema.currentVersion {
            let library = try TemporaryLibrary()
            do {
                let db = try Database(path: library.storePath)
                for version in 0..<start {
                    try db.execute(Schema.migrations[version])
                    try db.execute("PRAGMA user_version = \(version + 1)")
                }
            }
            let store = try library.open()
            #expect(try Database(path: library.storePath).query("PRAGMA user_version").first?.first?.int == Schema.currentVersion)
            try library.write("a.jpg")
            #expect(try store.scan().changes.added == ["a.jpg"])
        }
    }

    @Test func refusesANewerSchema() throws {
        let library = try TemporaryLibrary()
        do {
            let db = try Database(path: library.storePath)
            try db.execute("PRAGMA user_version = \(Schema.currentVersion + 1)")
        }
        let error = try #require(throws: StoreError.self) { try library.open() }
        #expect(error.code == .newerSchema)
    }

    @Test func aStoreBelongsToOneLibrary() throws {
        let library = try TemporaryLibrary()
        _ = try library.open()
        let other = library.root.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        let error = try #require(throws: StoreError.self) { try AssetStore(root: other.path, path: library.storePath) }
        #expect(error.code == .wrongLibrary)
    }

    @Test func defaultPathFollowsXDGStateHome() throws {
        let path = try AssetStore.defaultPath(forRoot: "/photos/Family Trip")
        let base = ProcessInfo.processInfo.environment["XDG_STATE_HOME"].map { $0 + "/photodrain" }
            ?? (ProcessInfo.processInfo.environment["HOME"] ?? "") + "/.local/state/photodrain"
        #expect(path.hasPrefix(base + "/Family_Trip-"))
        #expect(path.hasSuffix(".sqlite"))
        #expect(try AssetStore.defaultPath(forRoot: "/photos/Family Trip") == path)
        #expect(try AssetStore.defaultPath(forRoot: "/other/Family Trip") != path)
    }
}
