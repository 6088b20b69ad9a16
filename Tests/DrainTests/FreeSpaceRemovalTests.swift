import AssetStore
import Drain
import Foundation
import Testing

/// `FreeSpaceRemoval` on a real folder (issue 33): the trash layout, a group that cannot go
/// whole stays whole, and `recover` settling what a SIGKILL between the steps leaves.
@Suite struct FreeSpaceRemovalTests {
    final class Library {
        let root: String
        let store: AssetStore
        init() throws {
            let base = FileManager.default.temporaryDirectory.appendingPathComponent("pd-free-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: base + "/library", withIntermediateDirectories: true)
            root = base
            store = try AssetStore(root: base + "/library", path: base + "/store.sqlite")
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }
        var library: String { store.root }
        func write(_ path: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: library + "/" + path))
        }
        /// The library-top trash only: the home trash of whoever runs the tests is never touched.
        var trash: [Trash] { [Trash(kind: .library, directory: library + "/.photodrain-trash", topdir: nil)] }
        func facts(_ path: String) throws -> FreeSpacePlan.FileFacts {
            let row = try #require(try store.asset(path: path))
            return FreeSpacePlan.FileFacts(path: path, size: Int64(row.size), proof: .verified, local: .same, answer: .present,
                                           digest: try #require(FileReader.sha256Hex(library + "/" + path)))
        }
        func records() throws -> [String: AssetRecord] {
            Dictionary(uniqueKeysWithValues: try store.assets().map { ($0.path, $0) })
        }
    }

    @Test func aGroupGoesIntoTheTrashWholeWithItsInfo() throws {
        let lib = try Library()
        try lib.write("IMG_1.JPG", "photo")
        try lib.write("IMG_1.MOV", "movie")
        _ = try lib.store.scan()
        let group = FreeSpacePlan.Group(photo: try lib.facts("IMG_1.JPG"), companions: [try lib.facts("IMG_1.MOV")], date: 0)
        let outcome = try FreeSpaceRemoval.remove([group], records: try lib.records(), serverIDs: [:], store: lib.store,
                                                  destination: "http://h/uploads", proof: "verified", mode: .trash, trashes: lib.trash)
        #expect(outcome.failed.isEmpty)
        #expect(outcome.freedBytes == 10)
        for name in ["IMG_1.JPG", "IMG_1.MOV"] {
            #expect(!FileManager.default.fileExists(atPath: lib.library + "/" + name))
            #expect(FileManager.default.fileExists(atPath: lib.library + "/.photodrain-trash/files/" + name))
            let info = try String(contentsOfFile: lib.library + "/.photodrain-trash/info/\(name).trashinfo", encoding: .utf8)
            #expect(info.hasPrefix("[Trash Info]\nPath=\(lib.library)/\(name)\nDeletionDate="))
        }
        #expect(try lib.store.removals(in: [.trashed]).map(\.path) == ["IMG_1.JPG", "IMG_1.MOV"])
        #expect(try lib.store.assets().isEmpty)
    }

    @Test func aFileChangedSinceTheCheckKeepsItsWholeGroup() throws {
        let lib = try Library()
        try lib.write("IMG_1.JPG", "photo")
        try lib.write("IMG_1.MOV", "movie")
        _ = try lib.store.scan()
        var movie = try lib.facts("IMG_1.MOV")
        movie.digest = String(repeating: "0", count: 64)   // the bytes the destination vouched for were others
        let group = FreeSpacePlan.Group(photo: try lib.facts("IMG_1.JPG"), companions: [movie], date: 0)
        let outcome = try FreeSpaceRemoval.remove([group], records: try lib.records(), serverIDs: [:], store: lib.store,
                                                  destination: "http://h/uploads", proof: "verified", mode: .trash, trashes: lib.trash)
        #expect(outcome.removed.isEmpty)
        #expect(outcome.failed.first?.reason.contains("IMG_1.MOV") == true)
        #expect(try String(contentsOfFile: lib.library + "/IMG_1.JPG", encoding: .utf8) == "photo")
        #expect(try String(contentsOfFile: lib.library + "/IMG_1.MOV", encoding: .utf8) == "movie")
        #expect(try lib.store.removals().isEmpty)
        #expect(try lib.store.assets().count == 2)
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: lib.library + "/.photodrain-trash/files")) ?? []
        #expect(leftovers.isEmpty)
        let infos = (try? FileManager.default.contentsOfDirectory(atPath: lib.library + "/.photodrain-trash/info")) ?? []
        #expect(infos.isEmpty)
    }

    /// The three places a SIGKILL can leave a file between intent and outcome.
    @Test func recoverFinishesWhatMovedAndUndoesWhatDidNot() throws {
        let lib = try Library()
        for name in ["moved.jpg", "stayed.jpg", "deleted.jpg", "kept.jpg"] { try lib.write(name, name) }
        _ = try lib.store.scan()
        let trash = lib.trash[0]
        func intent(_ name: String, _ state: AssetStore.Removal.State) throws -> (Int64, Trash.Slot) {
            let slot = try #require(trash.claim(for: lib.library + "/" + name, date: Date()))
            let removal = AssetStore.Removal(path: name, photo: name, sha256: try #require(FileReader.sha256Hex(lib.library + "/" + name)), size: 1,
                                             mtimeNanoseconds: 0, destination: "http://h/uploads", serverID: nil, proof: "verified",
                                             state: state, trashPath: state == .trashing ? slot.file : nil,
                                             infoPath: state == .trashing ? slot.info : nil, startedAt: 0)
            return (try lib.store.recordRemovalIntent(removal), slot)
        }
        // Killed after the rename, before "done".
        let (_, movedSlot) = try intent("moved.jpg", .trashing)
        #expect(Trash.move(lib.library + "/moved.jpg", to: movedSlot.file) == .moved)
        // Killed after the intent, before the rename.
        let (_, stayedSlot) = try intent("stayed.jpg", .trashing)
        // --delete killed after the unlink, and before it.
        _ = try intent("deleted.jpg", .deleting)
        try FileManager.default.removeItem(atPath: lib.library + "/deleted.jpg")
        _ = try intent("kept.jpg", .deleting)

        let recovery = try FreeSpaceRemoval.recover(store: lib.store)
        #expect(recovery == FreeSpaceRemoval.Recovery(finished: 2, undone: 2))
        #expect(try lib.store.removals(in: [.trashed]).map(\.path) == ["moved.jpg"])
        #expect(try lib.store.removals(in: [.deleted]).map(\.path) == ["deleted.jpg"])
        #expect(try lib.store.removals(in: [.trashing, .deleting]).isEmpty)
        #expect(FileManager.default.fileExists(atPath: movedSlot.file))
        #expect(FileManager.default.fileExists(atPath: lib.library + "/stayed.jpg"))
        #expect(!FileManager.default.fileExists(atPath: stayedSlot.info))
        #expect(FileManager.default.fileExists(atPath: lib.library + "/kept.jpg"))
        #expect(try lib.store.assets().map(\.path) == ["kept.jpg", "stayed.jpg"])
        // A second pass finds nothing left to settle.
        #expect(try FreeSpaceRemoval.recover(store: lib.store) == FreeSpaceRemoval.Recovery())
    }

    @Test func purgeEmptiesOnlyWhatIsDueAndRecordsIt() throws {
        let lib = try Library()
        try lib.write("old.jpg", "old")
        try lib.write("new.jpg", "new")
        _ = try lib.store.scan()
        let groups = [FreeSpacePlan.Group(photo: try lib.facts("old.jpg"), date: 0), FreeSpacePlan.Group(photo: try lib.facts("new.jpg"), date: 0)]
        let outcome = try FreeSpaceRemoval.remove(groups, records: try lib.records(), serverIDs: [:], store: lib.store,
                                                  destination: "http://h/uploads", proof: "verified", mode: .trash, trashes: lib.trash)
        #expect(outcome.removed.count == 2)
        let trashed = try lib.store.removals(in: [.trashed])
        let cutoff = try #require(trashed.first?.removedAt)
        // Nothing was removed before the first removal's time.
        #expect(try FreeSpaceRemoval.purge(store: lib.store, before: cutoff).count == 0)
        let all = try FreeSpaceRemoval.purge(store: lib.store, before: nil)
        #expect(all.count == 2 && all.bytes == 6)
        #expect(try lib.store.removals(in: [.purged]).count == 2)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: lib.library + "/.photodrain-trash/files")) ?? []).isEmpty)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: lib.library + "/.photodrain-trash/info")) ?? []).isEmpty)
    }
}
