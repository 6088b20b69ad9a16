import Foundation
import FaceClustering

/// A person as `people` lists them: the faces of every cluster that belongs to them.
public struct PersonRecord: Sendable, Equatable {
    /// The person's id (their first cluster's): stable across clustering passes.
    public var id: Int64
    /// The name a user gave; nil until then.
    public var name: String?
    /// The face nearest the person's centroid; nil when they have no face left.
    public var representative: Int64?
    /// Their faces, by photo path and face order.
    public var faces: [FaceRecord]
}

/// People and what users decide about them (`photodrain people`). Every decision is kept where
/// clustering reads it, so later passes keep it: a name on the person's row, a merge as the link
/// from the merged cluster to its person, a split or forget as the face's `decision`.
extension AssetStore {
    /// Every person with a face or a name, by id, with their faces. Clustering is not run.
    public func people() throws(StoreError) -> [PersonRecord] {
        try withDatabase { (db) throws(StoreError) -> [PersonRecord] in
            var people: [PersonRecord] = []
            var index: [Int64: Int] = [:]
            for row in try db.query("SELECT id, name, representative_face FROM people WHERE id = person ORDER BY id") {
                guard let id = row[0].int.map(Int64.init) else { continue }
                index[id] = people.count
                people.append(PersonRecord(id: id, name: row[1].string, representative: row[2].int.map(Int64.init), faces: []))
            }
            try db.forEach("""
                SELECT \(Self.faceColumns) \(Self.faceJoins) WHERE p.id IS NOT NULL ORDER BY p.id, a.path, f.face_index
                """) { (row) throws(StoreError) in
                let face = Self.faceRecord(row)
                if let person = face.person, let i = index[person] { people[i].faces.append(face) }
            }
            return people.filter { !$0.faces.isEmpty || $0.name != nil }
        }
    }

    /// How many face rows there are, how many have a person, how many have no embedding, and
    /// how many of those are narrower than `minimumFaceSize` (never embedded).
    public func faceTally(minimumFaceSize: Int = 0) throws(StoreError) -> (faces: Int, clustered: Int, withoutEmbedding: Int, tooSmall: Int) {
        try withDatabase { (db) throws(StoreError) -> (faces: Int, clustered: Int, withoutEmbedding: Int, tooSmall: Int) in
            let row = try db.query("""
                SELECT COUNT(*), COUNT(cluster_id), COALESCE(SUM(embedding IS NULL), 0),
                       COALESCE(SUM(embedding IS NULL AND width < ?), 0) FROM faces
                """, [.integer(Int64(minimumFaceSize))]).first
            return (row?[0].int ?? 0, row?[1].int ?? 0, row?[2].int ?? 0, row?[3].int ?? 0)
        }
    }

    /// Names person `id` (any of their clusters' ids finds them); nil or an empty name clears it.
    /// Returns the person's id. Throws `notFound` when there is no such person.
    @discardableResult
    public func namePerson(_ id: Int64, _ name: String?) throws(StoreError) -> Int64 {
        try withDatabase { (db) throws(StoreError) -> Int64 in
            try db.transaction { () throws(StoreError) -> Int64 in
                let person = try Self.person(of: id, db)
                let trimmed = name.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                try db.run("UPDATE people SET name = ? WHERE id = ?",
                           [trimmed.flatMap { $0.isEmpty ? nil : SQLValue.text($0) } ?? .null, .integer(person)])
                return person
            }
        }
    }

    /// Makes `other` part of person `into`: every cluster of `other` links to `into`, which keeps
    /// its id, and its name (or takes `other`'s when it has none). Returns `into`'s id. Throws
    /// `notFound` for an unknown id, `cannotLink` when one photo has a face of each (two faces of
    /// one photo are never one person: split or forget one first), `invalidArgument` when they are
    /// one person already.
    @discardableResult
    public func mergePeople(_ into: Int64, _ other: Int64) throws(StoreError) -> Int64 {
        try withDatabase { (db) throws(StoreError) -> Int64 in
            try db.transaction { () throws(StoreError) -> Int64 in
                let kept = try Self.person(of: into, db), merged = try Self.person(of: other, db)
                guard kept != merged else { throw StoreError(.invalidArgument, "\(into) and \(other) are one person already (\(kept))") }
                let shared = try db.query("""
                    SELECT a.path FROM faces f1 JOIN people c1 ON c1.id = f1.cluster_id JOIN faces f2 ON f2.asset_id = f1.asset_id
                    JOIN people c2 ON c2.id = f2.cluster_id JOIN assets a ON a.id = f1.asset_id
                    WHERE c1.person = ? AND c2.person = ? ORDER BY a.path LIMIT 1
                    """, [.integer(kept), .integer(merged)]).first?.first?.string
                if let shared {
                    throw StoreError(.cannotLink, "people \(kept) and \(merged) both have a face in \(shared), and two faces of one photo are never one person; split or forget one of them first")
                }
                try db.run("""
                    UPDATE people SET name = (SELECT name FROM people WHERE id = ?) WHERE id = ? AND name IS NULL
                    """, [.integer(merged), .integer(kept)])
                try db.run("UPDATE people SET person = ?, name = NULL WHERE person = ?", [.integer(kept), .integer(merged)])
                try Self.chooseRepresentative(of: kept, db)
                return kept
            }
        }
    }

    /// Takes face `faceID` out of its person into a person of its own, and keeps it there
    /// (clustering never moves it back). Returns the new person's id. Throws `notFound` when
    /// there is no such face, `invalidArgument` when it is in no person.
    @discardableResult
    public func splitFace(_ faceID: Int64) throws(StoreError) -> Int64 {
        try withDatabase { (db) throws(StoreError) -> Int64 in
            try db.transaction { () throws(StoreError) -> Int64 in
                let (cluster, embedding, key) = try Self.clusteredFace(faceID, db)
                let id = try Self.nextClusterID(db)
                try db.run("INSERT INTO people(id, person, centroid_sum, member_count, first_face) VALUES (?, ?, ?, 1, ?)",
                           [.integer(id), .integer(id), .blob(embedding), .text(key)])
                try db.run("UPDATE faces SET cluster_id = ?, decision = 'split' WHERE id = ?", [.integer(id), .integer(faceID)])
                try Self.recompute(cluster: cluster, db)
                try Self.chooseRepresentative(of: id, db)
                return id
            }
        }
    }

    /// Takes face `faceID` out of every person for good (a stranger, a poster): clustering
    /// never gives it one again, until its photo changes. Throws `notFound` when there is no such
    /// face, `invalidArgument` when it is in no person.
    public func forgetFace(_ faceID: Int64) throws(StoreError) {
        try withDatabase { (db) throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let (cluster, _, _) = try Self.clusteredFace(faceID, db)
                try db.run("UPDATE faces SET cluster_id = NULL, decision = 'forgotten' WHERE id = ?", [.integer(faceID)])
                try Self.recompute(cluster: cluster, db)
            }
        }
    }

    /// The person cluster `id` belongs to. Throws `notFound` when there is no such cluster.
    static func person(of id: Int64, _ db: Database) throws(StoreError) -> Int64 {
        guard let person = try db.query("SELECT person FROM people WHERE id = ?", [.integer(id)]).first?.first?.int else {
            throw StoreError(.notFound, "no person has id \(id); `photodrain people` lists them")
        }
        return Int64(person)
    }

    /// A face's cluster, embedding bytes and stable key ('path#index'), for a split or a forget.
    static func clusteredFace(_ faceID: Int64, _ db: Database) throws(StoreError) -> (Int64, [UInt8], String) {
        guard let row = try db.query("""
            SELECT f.cluster_id, f.embedding, a.path || '#' || f.face_index FROM faces f JOIN assets a ON a.id = f.asset_id WHERE f.id = ?
            """, [.integer(faceID)]).first else {
            throw StoreError(.notFound, "no face has id \(faceID); `photodrain people` lists them")
        }
        guard let cluster = row[0].int, let embedding = row[1].bytes else {
            throw StoreError(.invalidArgument, "face \(faceID) is in no person")
        }
        return (Int64(cluster), embedding, row[2].string ?? "")
    }
}
