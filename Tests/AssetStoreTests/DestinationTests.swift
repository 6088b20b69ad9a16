import Foundation
import Testing
@testable import AssetStore
import UploadProtocol

/// "uploaded" means uploaded *there*. The store remembers each destination's
/// marks; a run naming another destination is refused unless asked for, and then gets its own.
@Suite struct DestinationTests {
    private static let first = "http://127.0.0.1:8080/uploads"
    private static let second = "http://127.0.0.1:9090/uploads"

    /// Three analysed photos, two of them uploaded to `first`.
    private func uploadedLibrary() throws -> (TemporaryLibrary, AssetStore) {
        let library = try TemporaryLibrary()
        for name in ["a.jpg", "b.jpg", "c.jpg"] { try library.write(name) }
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) {
            #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: asset))
        }
        try store.useDestination(Self.first, allowChange: false)
        for asset in try store.claimForUpload(limit: 10) where asset.path != "c.jpg" {
            #expect(try store.recordUploaded(asset, serverID: "id-\(asset.path)"))
        }
        try store.releaseClaims()
        return (library, store)
    }

    @Test func anotherDestinationIsRefusedNamingBoth() throws {
        let (library, store) = try uploadedLibrary()
        defer { withExtendedLifetime(library) {} }
        do {
            try store.useDestination(Self.second, allowChange: false)
            Issue.record("a second destination was taken as if the photos were there")
        } catch {
            #expect(error.code == .destinationChanged)
            #expect(error.message.contains(Self.first) && error.message.contains(Self.second))
            #expect(error.message.contains("--new-destination"))
        }
        #expect(try store.counts().uploaded == 2)
        // The same destination, written differently, is the same one.
        #expect(try store.useDestination("HTTP://127.0.0.1:8080/uploads/", allowChange: false).previous == nil)
    }

    @Test func aNewDestinationGetsItsOwnUploadsAndTheOldOnesAreKept() throws {
        let (library, store) = try uploadedLibrary()
        defer { withExtendedLifetime(library) {} }
        let use = try store.useDestination(Self.second, allowChange: true)
        #expect(use.previous == Self.first && use.alreadyThere == 0)
        #expect(try store.counts().uploaded == 0)
        #expect(try store.uploadableCount() == 3)
        let b = try #require(try store.claimForUpload(limit: 10).first { $0.path == "b.jpg" })
        #expect(try store.recordUploaded(b, serverID: "second-b"))
        let counts = try store.destinationCounts()
        #expect(counts.map(\.destination) == [Self.second, Self.first])
        #expect(counts.map(\.uploaded) == [1, 2])
        // Back to the first: its marks return, the second's stay kept.
        try store.useDestination(Self.first, allowChange: true)
        #expect(try store.assets(in: .uploaded).map(\.path) == ["a.jpg", "b.jpg"])
        #expect(try store.asset(path: "b.jpg")?.serverID == "id-b.jpg")
        #expect(try store.uploadedAssets(to: Self.second).map(\.asset.path) == ["b.jpg"])
    }

    @Test func aDestinationThatGotNothingIsNoReasonToRefuse() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let store = try library.open()
        _ = try store.scan()
        try store.useDestination("http://portal.example/uploads", allowChange: false)
        #expect(try store.useDestination(Self.first, allowChange: false).previous == nil)
        #expect(try store.activeDestination() == Self.first)
    }

    @Test func verifyingMissingPhotosQueuesThemAgain() throws {
        let (library, store) = try uploadedLibrary()
        defer { withExtendedLifetime(library) {} }
        let marked = try store.uploadedAssets(to: Self.first)
        #expect(marked.map(\.asset.path) == ["a.jpg", "b.jpg"])
        let a = try #require(marked.first).asset
        #expect(try store.recordVerification(a, destination: Self.first, present: false))
        #expect(try store.asset(path: "a.jpg")?.state == .analyzed)
        #expect(try store.claimForUpload(limit: 10).map(\.path).sorted() == ["a.jpg", "c.jpg"])
        #expect(try store.uploadedAssets(to: Self.first).map(\.asset.path) == ["b.jpg"])
    }

    @Test func unverifiedUploadsAreShownAsSuchUntilVerified() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 1) { _ = try store.bankVerdict(TemporaryLibrary.verdict(), for: asset) }
        try store.useDestination(Self.first, allowChange: false)
        let a = try #require(try store.claimForUpload(limit: 1).first)
        #expect(try store.recordUploaded(a, serverID: nil, proof: .unverified))
        #expect(try store.asset(path: "a.jpg")?.state == .uploadedUnverified)
        #expect(try store.counts().uploadedUnverified == 1)
        #expect(try store.assets(in: .uploaded).isEmpty)
        let marked = try #require(try store.uploadedAssets(to: Self.first).first)
        #expect(marked.proof == "unverified")
        #expect(try store.recordVerification(marked.asset, destination: Self.first, present: true))
        #expect(try store.asset(path: "a.jpg")?.state == .uploaded)
        #expect(try store.counts().uploadedUnverified == 0)
    }
}

/// A drain that finds a photo held by another runner on the same store says so.
@Suite struct HeldByOtherRunnersTests {
    @Test func claimsOfAnotherLiveProcessAreCountedAndOurOwnAreNot() throws {
        let library = try TemporaryLibrary()
        for name in ["a.jpg", "b.jpg"] { try library.write(name) }
        let mine = try library.open()
        _ = try mine.scan()
        let other = try library.open()
        #expect(try other.claimUnanalyzed(limit: 1).count == 1)
        // Another store object of this process: not "another runner".
        #expect(try mine.heldByOtherRunners().count == 0)
        // The same claim written as held by a live process that is not this one (pid 1, init).
        try mine.withDatabase { (db) throws(StoreError) in
            _ = try db.run("UPDATE assets SET lease_owner = '1:7' WHERE lease_owner IS NOT NULL")
        }
        let held = try mine.heldByOtherRunners()
        #expect(held.count == 1 && held.processes == [1])
    }
}

/// Which photo a companion file belongs to.
@Suite struct CompanionMatchTests {
    static let library = ["a/img_0001.heic": "a/IMG_0001.HEIC", "a/img_0002.jpg": "a/IMG_0002.jpg", "b/img_0001.jpeg": "b/IMG_0001.jpeg"]

    @Test(arguments: [
        ("a/IMG_0001.MOV", "a/IMG_0001.HEIC"), ("a/IMG_0001.aae", "a/IMG_0001.HEIC"), ("a/IMG_0001.HEIC.xmp", "a/IMG_0001.HEIC"),
        ("a/IMG_0001.xmp", "a/IMG_0001.HEIC"), ("a/IMG_0002.mp4", "a/IMG_0002.jpg"), ("b/IMG_0001.MOV", "b/IMG_0001.jpeg"),
    ])
    func aCompanionFindsItsPhotoInItsOwnFolder(companion: String, photo: String) {
        #expect(Companions.photo(for: companion, in: Self.library) == photo)
    }

    @Test(arguments: ["a/IMG_0003.MOV", "c/IMG_0001.MOV", "a/IMG_0001.txt.xmp"])
    func aFileWithoutAPhotoOfItsNameIsNoCompanion(path: String) {
        #expect(Companions.photo(for: path, in: Self.library) == nil)
    }
}
