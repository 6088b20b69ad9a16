import FaceClustering
import Foundation
import Testing
@testable import AssetStore

/// Faces banked with their verdict and gone with it (store migration 13).
@Suite struct FaceStoreTests {
    static func verdict(boxes: Int, embeddings: [[Float]]? = nil) -> BankedVerdict {
        var verdict = TemporaryLibrary.verdict(faces: boxes)
        verdict.faces = (0..<boxes).map { i in
            BankedFace(index: i, x: 10 * i, y: 5, width: 40, height: 48, keypoints: [1.5, 2, 3, 4],
                       embedding: embeddings.map { $0[i] })
        }
        return verdict
    }

    @Test func facesAreBankedWithTheVerdict() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let store = try library.open()
        _ = try store.scan()
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        var synthetic = SyntheticFaces(seed: 1)
        #expect(try store.bankVerdict(Self.verdict(boxes: 2, embeddings: [synthetic.face(of: 0), [Float.nan]]), for: asset))
        let faces = try store.faces(ofPhoto: "a.jpg")
        #expect(faces.map(\.face.index) == [0, 1])
        #expect(faces[1].face.x == 10 && faces[1].face.width == 40 && faces[1].face.height == 48)
        #expect(faces[0].face.keypoints == [1.5, 2, 3, 4])
        // The malformed embedding is not kept; the face is.
        let db = try Database(path: library.storePath)
        #expect(try db.query("SELECT length(embedding) FROM faces ORDER BY face_index").map { $0[0].int } == [512, nil])
    }

    @Test func aDroppedVerdictBanksNoFaces() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", "one")
        let store = try library.open()
        _ = try store.scan()
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        try library.write("a.jpg", "a different photo")
        _ = try store.scan()
        #expect(try store.bankVerdict(Self.verdict(boxes: 1), for: asset) == false)
        #expect(try store.faces(ofPhoto: "a.jpg").isEmpty)
    }

    @Test func aChangedOrRemovedPhotoLosesItsFaces() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", "one")
        try library.write("b.jpg", "two")
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 2) { try store.bankVerdict(Self.verdict(boxes: 2), for: asset) }
        #expect(try store.faces(ofPhoto: "a.jpg").count == 2)
        try library.write("a.jpg", "a different photo")
        try library.remove("b.jpg")
        _ = try store.scan()
        #expect(try store.faces(ofPhoto: "a.jpg").isEmpty)
        let db = try Database(path: library.storePath)
        #expect(try db.query("SELECT COUNT(*) FROM faces").first?.first?.int == 0)
        // Analysed again, it has its new faces.
        let again = try #require(try store.claimUnanalyzed(limit: 1).first)
        #expect(try store.bankVerdict(Self.verdict(boxes: 1), for: again))
        #expect(try store.faces(ofPhoto: "a.jpg").count == 1)
    }

    /// A store analysed before migration 13 gets a face row per confirmed face of each verdict.
    @Test func aVersion12StoreGetsItsConfirmedFacesAsRows() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", "one")
        try library.write("b.jpg", "two")
        let json = """
            {"faces":[{"confirmed":true,"probability":0.9,"region":{"x":3,"y":4,"width":20,"height":22,"neighbors":0,"detectorScore":0.8,"keypoints":[1,2,3,4]}},\
            {"confirmed":false,"probability":0.1,"region":{"x":50,"y":4,"width":20,"height":22,"neighbors":0,"detectorScore":0.1}},\
            {"confirmed":true,"probability":0.8,"region":{"x":90,"y":9,"width":30,"height":31,"neighbors":0,"detectorScore":0.7}}],"label":"faces"}
            """
        do {
            let db = try Database(path: library.storePath)
            for version in 0..<12 {
                try db.execute(Schema.migrations[version])
                try db.execute("PRAGMA user_version = \(version + 1)")
            }
            try db.run("INSERT INTO assets(path, size, mtime_ns, discovered_at, analyzed_at, verdict, label) VALUES ('a.jpg', 3, 0, 0, 1, ?, 'faces')",
                       [.text(json)])
            try db.run("INSERT INTO assets(path, size, mtime_ns, discovered_at, analyzed_at, verdict, label) VALUES ('b.jpg', 3, 0, 0, 1, 'not json', 'faces')")
        }
        let store = try library.open()
        let faces = try store.faces(ofPhoto: "a.jpg")
        #expect(faces.map(\.face.index) == [0, 1])
        #expect(faces.map(\.face.x) == [3, 90])
        #expect(faces[0].face.keypoints == [1, 2, 3, 4] && faces[1].face.keypoints == nil)
        #expect(try store.faces(ofPhoto: "b.jpg").isEmpty)
    }
}
