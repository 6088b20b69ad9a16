import Foundation
import Testing
@testable import AssetStore

/// The store's record of removals (migration 11, issue 33), and the trash kept out of scans.
@Suite struct RemovalTests {
    static func removal(_ path: String, state: AssetStore.Removal.State, trash: String?) -> AssetStore.Removal {
        AssetStore.Removal(path: path, photo: path, sha256: String(repeating: "a", count: 64), size: 5, mtimeNanoseconds: 1,
                           destination: "http://host/uploads", serverID: "obj1", proof: "verified", state: state,
                           trashPath: trash, infoPath: nil, startedAt: 1)
    }

    @Test func anIntentBecomesARemovalThatDropsTheRowOrIsForgotten() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        try library.write("b.jpg")
        let store = try library.open()
        _ = try store.scan()
        let a = try store.recordRemovalIntent(Self.removal("a.jpg", state: .trashing, trash: "/t/files/a.jpg"))
        let b = try store.recordRemovalIntent(Self.removal("b.jpg", state: .deleting, trash: nil))
        #expect(try store.removals(in: [.trashing, .deleting]).map(\.id) == [a, b])
        // The intent alone leaves the row: the file has not moved yet.
        #expect(try store.asset(path: "a.jpg") != nil)
        try store.recordRemovalDone(a)
        #expect(try store.asset(path: "a.jpg") == nil)
        #expect(try store.removals(in: [.trashed]).map(\.path) == ["a.jpg"])
        #expect(try store.removals(in: [.trashed]).first?.destination == "http://host/uploads")
        try store.abandonRemoval(b)
        #expect(try store.asset(path: "b.jpg") != nil)
        #expect(try store.removals().map(\.path) == ["a.jpg"])
        // A finished removal is not forgotten by a late abandon.
        try store.abandonRemoval(a)
        #expect(try store.removals().count == 1)
        try store.recordRemovalState(a, .restored)
        #expect(try store.removals().first?.state == .restored)
        #expect(try store.removals().first?.restoredAt != nil)
    }

    @Test func scansNeverSeeTheLibrarysTrashesEvenWithHiddenFiles() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        try library.write(".photodrain-trash/files/b.jpg")
        try library.write(".Trash-\(getuid())/files/c.jpg")
        try library.write(".hidden/d.jpg")
        let store = try library.open()
        try store.includeHiddenFiles()
        _ = try store.scan(full: true)
        #expect(try store.assets().map(\.path) == [".hidden/d.jpg", "a.jpg"])
    }
}
