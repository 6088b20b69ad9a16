import Foundation
import FaceClustering

/// A photo's faces: written with its verdict (`bankVerdict`), read back with their people for
/// `verdicts`, uploads and `people`.
extension AssetStore {
    /// Writes `faces` as the rows of the photo `assetID`, replacing any it had; the caller holds
    /// the transaction its verdict is banked in. An embedding that is not 128 finite Floats is
    /// not kept (the face is, without one).
    static func insertFaces(_ faces: [BankedFace], assetID: Int64, _ db: Database) throws(StoreError) {
        try db.run("DELETE FROM faces WHERE asset_id = ?", [.integer(assetID)])
        guard !faces.isEmpty else { return }
        let insert = try db.prepare("""
            INSERT INTO faces(asset_id, face_index, x, y, width, height, keypoints, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for face in faces {
            let embedding = face.embedding.flatMap { FaceEmbedding.isValid($0) ? SQLValue.blob(FaceEmbedding.bytes($0)) : nil }
            try insert.bind([.integer(assetID), .integer(Int64(face.index)), .integer(Int64(face.x)), .integer(Int64(face.y)),
                             .integer(Int64(face.width)), .integer(Int64(face.height)),
                             SQLValue(face.keypoints.flatMap(Self.keypointsJSON)), embedding ?? .null])
            while try insert.step() {}
        }
    }

    /// Keypoints as a JSON array; nil when one is not finite (JSON has no NaN).
    static func keypointsJSON(_ values: [Float]) -> String? {
        guard values.allSatisfy(\.isFinite) else { return nil }
        return "[" + values.map { "\($0)" }.joined(separator: ",") + "]"
    }

    /// The columns `faceRecord(_:)` reads, over `faces f JOIN assets a` with the face's cluster
    /// `c` and person `p` left-joined.
    static let faceColumns = """
        f.id, a.path, f.face_index, f.x, f.y, f.width, f.height, f.keypoints, f.embedding IS NOT NULL, p.id, p.name, f.decision
        """
    static let faceJoins = """
        FROM faces f JOIN assets a ON a.id = f.asset_id
        LEFT JOIN people c ON c.id = f.cluster_id LEFT JOIN people p ON p.id = c.person
        """

    static func faceRecord(_ row: [SQLValue], embedding: [Float]? = nil) -> FaceRecord {
        let keypoints = row[7].string.map { text in
            text.trimmingCharacters(in: ["[", "]"]).split(separator: ",").compactMap { Float($0.trimmingCharacters(in: .whitespaces)) }
        }
        let face = BankedFace(index: row[2].int ?? 0, x: row[3].int ?? 0, y: row[4].int ?? 0, width: row[5].int ?? 0,
                              height: row[6].int ?? 0, keypoints: keypoints, embedding: embedding)
        return FaceRecord(id: Int64(row[0].int ?? 0), path: row[1].string ?? "", face: face, person: row[9].int.map(Int64.init),
                          name: row[10].string, decision: row[11].string.flatMap(FaceRecord.Decision.init(rawValue:)))
    }

    /// The faces of the photo at `path`, in their order in its verdict, each with its person.
    public func faces(ofPhoto path: String) throws(StoreError) -> [FaceRecord] {
        try withDatabase { (db) throws(StoreError) -> [FaceRecord] in
            try db.query("SELECT \(Self.faceColumns) \(Self.faceJoins) WHERE a.path = ? ORDER BY f.face_index", [.text(path)])
                .map { Self.faceRecord($0) }
        }
    }

    /// Every face that has a person, by photo path, each photo's in face order: for readers that
    /// go through the whole library (`verdicts`) and cannot ask per photo while they read.
    public func facesWithPeople() throws(StoreError) -> [String: [FaceRecord]] {
        try withDatabase { (db) throws(StoreError) -> [String: [FaceRecord]] in
            var out: [String: [FaceRecord]] = [:]
            try db.forEach("SELECT \(Self.faceColumns) \(Self.faceJoins) WHERE p.id IS NOT NULL ORDER BY a.path, f.face_index") { (row) throws(StoreError) in
                let face = Self.faceRecord(row)
                out[face.path, default: []].append(face)
            }
            return out
        }
    }

    /// The face with row id `id`; nil when there is none.
    public func face(id: Int64) throws(StoreError) -> FaceRecord? {
        try withDatabase { (db) throws(StoreError) -> FaceRecord? in
            try db.query("SELECT \(Self.faceColumns) \(Self.faceJoins) WHERE f.id = ?", [.integer(id)]).first.map { Self.faceRecord($0) }
        }
    }
}

/// A photo whose banked faces have no embedding (analysed before descriptors existed, or with
/// `--people off`): what giving them theirs needs, from the photo as it was analysed.
public struct PhotoFacesToEmbed: Sendable, Equatable {
    /// The photo's row.
    public var assetID: Int64
    /// Its path, relative to the library.
    public var path: String
    /// Its banked verdict's JSON (its faces' keypoints, in the pixels of its analysis size).
    public var verdictJSON: String
    /// The digest its verdict was made from: the photo is embedded only while it still has it.
    public var sha256: String
}

extension AssetStore {
    /// The photo `a` has a verdict made from a known digest and a face at least
    /// `minimumFaceSize` wide without an embedding that no one told clustering to forget.
    static func hasFacesToEmbed(minimumFaceSize: Int) -> String {
        """
        a.verdict IS NOT NULL AND a.sha256 IS NOT NULL
          AND EXISTS (SELECT 1 FROM faces f WHERE f.asset_id = a.id AND f.embedding IS NULL AND f.width >= \(minimumFaceSize)
                      AND f.decision IS NOT 'forgotten')
        """
    }

    /// Photos with a face at least `minimumFaceSize` wide (smaller ones are never embedded) that
    /// has no embedding and no decision to forget it, by row id after `assetID`, at most `limit`:
    /// a pass pages through them so memory holds one page.
    public func photosWithFacesToEmbed(after assetID: Int64, limit: Int, minimumFaceSize: Int) throws(StoreError) -> [PhotoFacesToEmbed] {
        try withDatabase { (db) throws(StoreError) -> [PhotoFacesToEmbed] in
            try db.query("""
                SELECT a.id, a.path, a.verdict, a.sha256 FROM assets a
                WHERE a.id > ? AND \(Self.hasFacesToEmbed(minimumFaceSize: minimumFaceSize))
                ORDER BY a.id LIMIT ?
                """, [.integer(assetID), .integer(Int64(max(1, limit)))]).compactMap { row in
                guard let id = row[0].int, let path = row[1].string, let json = row[2].string, let sha = row[3].string else { return nil }
                return PhotoFacesToEmbed(assetID: Int64(id), path: path, verdictJSON: json, sha256: sha)
            }
        }
    }

    /// Gives the faces of photo `assetID` the embeddings `embeddings` (in face order) that have
    /// none yet, only while the photo's digest is still `sha256` (a photo analysed again since has
    /// faces of its own). An embedding that is not 128 finite Floats is not kept. Returns how many
    /// faces got one.
    @discardableResult
    public func storeEmbeddings(_ embeddings: [[Float]], assetID: Int64, sha256: String) throws(StoreError) -> Int {
        try withDatabase { (db) throws(StoreError) -> Int in
            try db.transaction { () throws(StoreError) -> Int in
                var stored = 0
                for (index, embedding) in embeddings.enumerated() where FaceEmbedding.isValid(embedding) {
                    stored += try db.run("""
                        UPDATE faces SET embedding = ? WHERE asset_id = ? AND face_index = ? AND embedding IS NULL
                          AND EXISTS (SELECT 1 FROM assets WHERE id = ? AND sha256 = ?)
                        """, [.blob(FaceEmbedding.bytes(embedding)), .integer(assetID), .integer(Int64(index)), .integer(assetID), .text(sha256)])
                }
                return stored
            }
        }
    }
}

extension AssetStore {
    /// How many photos `photosWithFacesToEmbed` would list, for a progress bar.
    public func photosToEmbedCount(minimumFaceSize: Int) throws(StoreError) -> Int {
        try withDatabase { (db) throws(StoreError) -> Int in
            try db.query("""
                SELECT COUNT(*) FROM assets a WHERE \(Self.hasFacesToEmbed(minimumFaceSize: minimumFaceSize))
                """).first?[0].int ?? 0
        }
    }
}
