import AssetStore
import Drain
import Foundation
import Testing

/// `PhotoRestore` (issue 33): which removals a PATH names, and bringing files back from the
/// trash on a real folder, including what a restore killed after its rename leaves.
@Suite struct PhotoRestoreTests {
    typealias Library = FreeSpaceRemovalTests.Library

    static func removal(_ id: Int64, _ path: String, photo: String? = nil, state: AssetStore.Removal.State = .trashed) -> AssetStore.Removal {
        AssetStore.Removal(id: id, path: path, photo: photo ?? path, sha256: "00", size: 1, mtimeNanoseconds: 0, destination: "d",
                           serverID: nil, proof: "verified", state: state, trashPath: nil, infoPath: nil, startedAt: 0)
    }

    @Test func aPathBringsItsPhotoWithItsCompanionsAndNothingRestoredTwice() {
        let removals = [
            Self.removal(1, "2023/IMG_1.HEIC"), Self.removal(2, "2023/IMG_1.MOV", photo: "2023/IMG_1.HEIC"),
            Self.removal(3, "2023/IMG_2.JPG", state: .purged), Self.removal(4, "2024/IMG_3.JPG", state: .deleted),
            Self.removal(5, "2024/IMG_4.JPG", state: .restored), Self.removal(6, "2024/IMG_5.JPG", state: .trashing),
        ]
        func chosen(_ paths: [String]) -> [Int64] { PhotoRestore.select(removals, paths: paths).map(\.id) }
        // The companion names its photo, and the photo brings the companion: photo first.
        #expect(chosen(["2023/IMG_1.MOV"]) == [1, 2])
        #expect(chosen(["2023/IMG_1.HEIC"]) == [1, 2])
        // A folder is everything removed under it; a name that only starts alike is not under it.
        #expect(chosen(["2023"]) == [1, 2, 3])
        #expect(chosen(["202"]) == [])
        // Restored and unsettled intents are never chosen; every open one without a path.
        #expect(chosen(["2024"]) == [4])
        #expect(chosen([]) == [1, 2, 3, 4])
        // A path removed twice (a new file there, removed again): the newer removal only.
        let twice = removals + [Self.removal(7, "2024/IMG_3.JPG", state: .trashed)]
        #expect(PhotoRestore.select(twice, paths: ["2024/IMG_3.JPG"]).map(\.id) == [7])
    }

    /// A library whose `IMG_1.JPG` and `IMG_1.MOV` went into its trash.
    static func trashed() throws -> Library {
        let lib = try Library()
        try lib.write("IMG_1.JPG", "photo")
        try lib.write("IMG_1.MOV", "movie")
        _ = try lib.store.scan()
        let group = FreeSpacePlan.Group(photo: try lib.facts("IMG_1.JPG"), companions: [try lib.facts("IMG_1.MOV")], date: 0)
        let outcome = try FreeSpaceRemoval.remove([group], records: try lib.records(), serverIDs: [:], store: lib.store,
                                                  destination: "http://h/uploads", proof: "verified", mode: .trash, trashes: lib.trash)
        #expect(outcome.removed.count == 1)
        return lib
    }

    @Test func theTrashGivesBackTheGroupWithItsTimesAndForgetsItsInfo() async throws {
        let lib = try Self.trashed()
        let before = try FileManager.default.attributesOfItem(atPath: lib.library + "/.photodrain-trash/files/IMG_1.JPG")[.modificationDate] as? Date
        let plan = PhotoRestore.plan(PhotoRestore.select(try lib.store.removals(), paths: ["IMG_1.MOV"]), store: lib.store)
        #expect(plan.items.map(\.source) == [.trash, .trash])
        // No destination is needed for what the trash holds.
        let outcome = try await PhotoRestore.run(plan.items, store: lib.store, destinations: [:])
        #expect(outcome.done.map(\.failure) == [nil, nil])
        #expect(try String(contentsOfFile: lib.library + "/IMG_1.JPG", encoding: .utf8) == "photo")
        #expect(try String(contentsOfFile: lib.library + "/IMG_1.MOV", encoding: .utf8) == "movie")
        #expect(try FileManager.default.attributesOfItem(atPath: lib.library + "/IMG_1.JPG")[.modificationDate] as? Date == before)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: lib.library + "/.photodrain-trash/info")) ?? []).isEmpty)
        #expect(try lib.store.removals(in: [.restored]).count == 2)
    }

    @Test func aTrashCopyWithOtherBytesIsNotPutBackAndNeedsTheDestination() async throws {
        let lib = try Self.trashed()
        try Data("other".utf8).write(to: URL(fileURLWithPath: lib.library + "/.photodrain-trash/files/IMG_1.JPG"))
        let plan = PhotoRestore.plan(PhotoRestore.select(try lib.store.removals(), paths: ["IMG_1.JPG"]), store: lib.store)
        let outcome = try await PhotoRestore.run(plan.items, store: lib.store, destinations: [:])
        let photo = try #require(outcome.done.first { $0.removal.path == "IMG_1.JPG" })
        #expect(photo.source == nil)
        #expect(photo.failure?.contains("no destination") == true, "\(photo.failure ?? "")")
        #expect(!FileManager.default.fileExists(atPath: lib.library + "/IMG_1.JPG"))
        #expect(try lib.store.removals(in: [.trashed]).map(\.path) == ["IMG_1.JPG"])
    }

    @Test func aRestoreKilledAfterItsRenameIsRecordedRestoredNotPurged() async throws {
        let lib = try Self.trashed()
        // As a restore killed between the rename and its record leaves it: in place, still "trashed".
        for name in ["IMG_1.JPG", "IMG_1.MOV"] {
            #expect(rename(lib.library + "/.photodrain-trash/files/" + name, lib.library + "/" + name) == 0)
        }
        let rerun = PhotoRestore.plan(PhotoRestore.select(try lib.store.removals(), paths: []), store: lib.store)
        #expect(rerun.items.map(\.source) == [.inPlace, .inPlace])
        // The next free-space's purge, before any rerun of restore, does not call them purged.
        let purged = try FreeSpaceRemoval.purge(store: lib.store, before: nil)
        #expect(purged.count == 0)
        #expect(try lib.store.removals(in: [.restored]).count == 2)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: lib.library + "/.photodrain-trash/info")) ?? []).isEmpty)
    }
}
