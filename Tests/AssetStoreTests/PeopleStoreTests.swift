import FaceClustering
import Foundation
import Testing
@testable import AssetStore

/// Clustering through the store, and users' decisions surviving later passes (issue 36 items 4, 5).
@Suite struct PeopleStoreTests {
    /// A photo of the synthetic library: its path and the identities of its faces, in order.
    typealias Photo = (path: String, identities: [Int])

    /// Writes the new ones of `photos` into `library`, scans, and banks each with the synthetic faces of its
    /// identities (`seed` fixes them), in `bankOrder`'s order of paths.
    static func bank(_ photos: [Photo], in library: TemporaryLibrary, store: AssetStore, seed: UInt64 = 42,
                     bankOrder: [String]? = nil) throws {
        // Photos already in the library are left as they are: rewritten, they would be changed photos.
        for photo in photos where !FileManager.default.fileExists(atPath: library.libraryPath + "/" + photo.path) {
            try library.write(photo.path, photo.path)
        }
        _ = try store.scan()
        let claimed = try store.claimUnanalyzed(limit: 10_000)
        let order = bankOrder ?? claimed.map(\.path)
        for path in order {
            guard let asset = claimed.first(where: { $0.path == path }), let photo = photos.first(where: { $0.path == path }) else { continue }
            try store.bankVerdict(verdict(photo, seed: seed), for: asset)
        }
    }

    /// The verdict of `photo`: its faces' embeddings follow from the seed, its path and face index,
    /// so two stores bank the same Floats for the same photo.
    static func verdict(_ photo: Photo, seed: UInt64) -> BankedVerdict {
        var verdict = TemporaryLibrary.verdict(faces: photo.identities.count)
        var centres = SyntheticFaces(seed: seed)
        var noise = SyntheticFaces(seed: stableHash(photo.path))
        verdict.faces = photo.identities.enumerated().map { index, identity in
            BankedFace(index: index, x: index * 50, y: 0, width: 40, height: 40, embedding: noise.face(near: centres.centre(of: identity)))
        }
        return verdict
    }

    static func stableHash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// Each face's person, by photo path and face index.
    static func partition(_ store: AssetStore) throws -> [String: Int64] {
        var out: [String: Int64] = [:]
        for person in try store.people() { for face in person.faces { out["\(face.path)#\(face.face.index)"] = person.id } }
        return out
    }

    static let photos: [Photo] = (0..<40).map { n in ("solo/\(String(format: "%03d", n)).jpg", [n % 8]) }
        + (0..<6).map { n in ("group/\(n).jpg", [n % 8, (n + 3) % 8, (n + 5) % 8]) }

    @Test func twoFacesOfOnePhotoStayApart() throws {
        let library = try TemporaryLibrary()
        let store = try library.open()
        // A photo of someone beside their own portrait: two faces of identity 0, twice.
        try Self.bank([("a.jpg", [0]), ("b.jpg", [0, 0]), ("c.jpg", [0, 1, 0])], in: library, store: store)
        try store.clusterFaces()
        let people = try store.people()
        for photo in ["b.jpg", "c.jpg"] {
            let persons = try store.faces(ofPhoto: photo).compactMap(\.person)
            #expect(Set(persons).count == persons.count)
        }
        #expect(people.allSatisfy { person in Set(person.faces.map(\.path)).count == person.faces.count })
        // Merging two people who share a photo is refused.
        let b = try store.faces(ofPhoto: "b.jpg").compactMap(\.person)
        let error = try #require(throws: StoreError.self) { try store.mergePeople(b[0], b[1]) }
        #expect(error.code == .cannotLink)
    }

    @Test func twoRunsMakeTheSamePartitionAndIDs() throws {
        let first = try TemporaryLibrary(), second = try TemporaryLibrary()
        let a = try first.open(), b = try second.open()
        try Self.bank(Self.photos, in: first, store: a)
        // The other run analyses (and banks) the photos in the reverse order.
        try Self.bank(Self.photos, in: second, store: b, bankOrder: Self.photos.map(\.path).reversed())
        let passA = try a.clusterFaces(), passB = try b.clusterFaces()
        #expect(passA == passB)
        #expect(passA.started == 8)
        let partitionA = try Self.partition(a)
        #expect(partitionA.count == 40 + 18)
        #expect(partitionA == (try Self.partition(b)))
        // A later pass has nothing to do and changes nothing.
        #expect(try a.clusterFaces() == ClusteringPass())
        #expect(try Self.partition(a) == partitionA)
    }

    @Test func namesMergesSplitsAndForgetsSurviveLaterClustering() throws {
        let library = try TemporaryLibrary()
        let store = try library.open()
        try Self.bank(Array(Self.photos.prefix(20)), in: library, store: store)
        try store.clusterFaces()
        let people = try store.people()
        #expect(people.count == 8)
        let anna = try #require(people.first { $0.faces.first?.path == "solo/000.jpg" })
        #expect(anna.faces.map(\.path) == ["solo/000.jpg", "solo/008.jpg", "solo/016.jpg"])
        try store.namePerson(anna.id, "Anna")
        // A user merges two people, splits a face out, forgets another.
        let bo = people[1].id == anna.id ? people[2] : people[1]
        let cy = try #require(people.first { $0.id != anna.id && $0.id != bo.id })
        #expect(try store.mergePeople(bo.id, cy.id) == bo.id)
        let dee = try #require(people.first { ![anna.id, bo.id, cy.id].contains($0.id) })
        let splitFace = try #require(dee.faces.last).id
        let alone = try store.splitFace(splitFace)
        let forgotten = anna.faces[2].id
        try store.forgetFace(forgotten)
        // More photos arrive, and a photo of Anna changes.
        try library.write(anna.faces[0].path, "retouched")
        try Self.bank(Self.photos, in: library, store: store)
        try store.clusterFaces()
        let after = try store.people()
        let annaAfter = try #require(after.first { $0.id == anna.id })
        #expect(annaAfter.name == "Anna")
        // Every face of identity 0 is hers, the changed photo's too, but the one forgotten.
        let identity0 = Self.photos.flatMap { photo in photo.identities.enumerated().filter { $0.element == 0 }.map { "\(photo.path)#\($0.offset)" } }
        #expect(Set(annaAfter.faces.map { "\($0.path)#\($0.face.index)" }) == Set(identity0).subtracting([anna.faces[2].path + "#0"]))
        #expect(!annaAfter.faces.contains { $0.id == forgotten })
        #expect(try store.face(id: splitFace)?.person == alone)
        #expect(try store.face(id: splitFace)?.decision == .split)
        #expect(try store.face(id: forgotten)?.person == nil)
        #expect(try store.face(id: forgotten)?.decision == .forgotten)
        // The merge holds: cy's new faces are bo's, and cy is no person of its own.
        #expect(!after.contains { $0.id == cy.id })
        let boAfter = try #require(after.first { $0.id == bo.id })
        #expect(boAfter.faces.count > bo.faces.count + cy.faces.count)
        // Every face of a group photo is in some person, none twice.
        for n in 0..<6 {
            let persons = try store.faces(ofPhoto: "group/\(n).jpg").compactMap(\.person)
            #expect(persons.count == 3 && Set(persons).count == 3)
        }
    }

    @Test func aNamedPersonWhosePhotosAllChangedKeepsTheirNameAndFindsTheirFacesAgain() throws {
        let library = try TemporaryLibrary()
        let store = try library.open()
        try Self.bank([("a.jpg", [5]), ("b.jpg", [6])], in: library, store: store)
        try store.clusterFaces()
        let person = try #require(try store.faces(ofPhoto: "a.jpg").first?.person)
        try store.namePerson(person, "Dora")
        try library.write("a.jpg", "edited")
        _ = try store.scan()
        try store.clusterFaces()
        #expect(try store.people().first { $0.id == person }?.faces.isEmpty == true)
        #expect(try store.people().first { $0.id == person }?.name == "Dora")
        try Self.bank([("a.jpg", [5])], in: library, store: store, seed: 42)
        try store.clusterFaces()
        #expect(try store.faces(ofPhoto: "a.jpg").first?.person == person)
        #expect(try store.faces(ofPhoto: "a.jpg").first?.name == "Dora")
    }

    @Test func unknownIDsAreNotFound() throws {
        let library = try TemporaryLibrary()
        let store = try library.open()
        #expect(throws: StoreError.self) { try store.namePerson(99, "Nobody") }
        #expect((try? store.splitFace(7)) == nil)
        let error = try #require(throws: StoreError.self) { try store.forgetFace(7) }
        #expect(error.code == .notFound)
    }
}
