import FaceClustering

/// What one clustering pass did.
public struct ClusteringPass: Sendable, Equatable {
    /// Faces that joined a person who was there before them.
    public var joined = 0
    /// Faces that started a person of their own.
    public var started = 0
    /// Clusters whose sums were made again because faces left them (a photo changed, a split, a forget).
    public var recomputed = 0

    /// A pass that did nothing, to count into.
    public init() {}
}

/// Clustering at library scale (issue 36 item 5): faces that have an embedding and no person
/// yet are given one by `PeopleClusterer`, against the clusters the store keeps; the faces
/// clustered before are never compared again.
extension AssetStore {
    /// How many faces a pass reads at a time: a first pass over a library of 100,000 faces holds
    /// a page of embeddings, not all of them.
    static let clusteringPage = 4096

    /// Gives every face that has an embedding, no person and no user decision a person, photo by
    /// photo in path order (then face order): the order that makes the same library the same
    /// people with the same ids, whatever order its photos were analysed in. One transaction.
    @discardableResult
    public func clusterFaces(threshold: Float = PeopleClusterer.defaultThreshold) throws(StoreError) -> ClusteringPass {
        try withDatabase { (db) throws(StoreError) -> ClusteringPass in
            try db.transaction { () throws(StoreError) -> ClusteringPass in
                var pass = ClusteringPass()
                pass.recomputed = try Self.recomputeStaleClusters(db)
                var clusterer = PeopleClusterer(clusters: try Self.loadClusters(db), nextID: try Self.nextClusterID(db), threshold: threshold)
                let setCluster = try db.prepare("UPDATE faces SET cluster_id = ? WHERE id = ?")
                let insertCluster = try db.prepare("""
                    INSERT INTO people(id, person, centroid_sum, member_count, first_face) VALUES (?, ?, ?, 1, ?)
                    """)
                while true {
                    let page = try db.query("""
                        SELECT f.id, f.asset_id, a.path, f.face_index, f.embedding FROM faces f JOIN assets a ON a.id = f.asset_id
                        WHERE f.embedding IS NOT NULL AND f.cluster_id IS NULL AND f.decision IS NULL
                        ORDER BY a.path, f.face_index LIMIT ?
                        """, [.integer(Int64(Self.clusteringPage))])
                    if page.isEmpty { break }
                    var photos = Self.photos(in: page)
                    // A full page may end part-way through a photo: that photo waits for the next page.
                    if page.count == Self.clusteringPage && photos.count > 1 { photos.removeLast() }
                    for photo in photos {
                        let assignments = clusterer.assign(photo: photo.embeddings)
                        for (face, assignment) in zip(photo.faces, assignments) {
                            guard let assignment else {
                                // Not an embedding the clusterer takes: drop it, so it is not read again.
                                try db.run("UPDATE faces SET embedding = NULL WHERE id = ?", [.integer(face.id)])
                                continue
                            }
                            if assignment.started {
                                try insertCluster.bind([.integer(assignment.cluster), .integer(assignment.person),
                                                        .blob(FaceEmbedding.bytes(photo.embeddings[face.offset])),
                                                        .text("\(photo.path)#\(face.index)")])
                                while try insertCluster.step() {}
                                pass.started += 1
                            } else {
                                pass.joined += 1
                            }
                            try setCluster.bind([.integer(assignment.cluster), .integer(face.id)])
                            while try setCluster.step() {}
                        }
                    }
                }
                let update = try db.prepare("UPDATE people SET centroid_sum = ?, member_count = ? WHERE id = ?")
                var persons: Set<Int64> = []
                for id in clusterer.touched.sorted() {
                    guard let cluster = clusterer.cluster(id) else { continue }
                    try update.bind([.blob(FaceEmbedding.bytes(cluster.sum)), .integer(Int64(cluster.count)), .integer(id)])
                    while try update.step() {}
                    persons.insert(cluster.person)
                }
                for person in persons.sorted() { try Self.chooseRepresentative(of: person, db) }
                return pass
            }
        }
    }

    /// One photo's pending faces, in face order.
    struct PendingPhoto {
        var path: String
        var faces: [(id: Int64, index: Int, offset: Int)] = []
        var embeddings: [[Float]] = []
    }

    /// The rows of a page (face id, asset id, path, index, embedding) grouped by photo, in order.
    static func photos(in page: [[SQLValue]]) -> [PendingPhoto] {
        var photos: [PendingPhoto] = []
        var lastAsset: Int64?
        for row in page {
            let asset = Int64(row[1].int ?? 0)
            if asset != lastAsset { photos.append(PendingPhoto(path: row[2].string ?? "")) }
            lastAsset = asset
            let embedding = row[4].bytes.flatMap(FaceEmbedding.floats) ?? []
            photos[photos.count - 1].faces.append((Int64(row[0].int ?? 0), row[3].int ?? 0, photos[photos.count - 1].embeddings.count))
            photos[photos.count - 1].embeddings.append(embedding)
        }
        return photos
    }

    /// Every cluster the store keeps.
    static func loadClusters(_ db: Database) throws(StoreError) -> [PeopleClusterer.Cluster] {
        try db.query("SELECT id, person, centroid_sum, member_count FROM people ORDER BY id").compactMap { row in
            guard let id = row[0].int, let person = row[1].int, let sum = row[2].bytes.flatMap(FaceEmbedding.floats) else { return nil }
            return PeopleClusterer.Cluster(id: Int64(id), person: Int64(person), sum: sum, count: row[3].int ?? 0)
        }
    }

    /// The id the next cluster gets: past every id ever given (AUTOINCREMENT's counter).
    static func nextClusterID(_ db: Database) throws(StoreError) -> Int64 {
        let seq = try db.query("SELECT seq FROM sqlite_sequence WHERE name = 'people'").first?.first?.int ?? 0
        let highest = try db.query("SELECT MAX(id) FROM people").first?.first?.int ?? 0
        return Int64(max(seq, highest) + 1)
    }

    /// Makes again the sum of every cluster whose faces are not the ones its count says (faces
    /// left it: their photo changed or went, or a user split or forgot them), adding its members
    /// in path and face order. A cluster left empty is deleted, unless it holds a name or another
    /// cluster was merged into it: it then keeps its last centroid as its sum (count 0), so its
    /// person's next face finds it again. Returns how many were made again.
    static func recomputeStaleClusters(_ db: Database) throws(StoreError) -> Int {
        let stale = try db.query("""
            SELECT p.id FROM people p LEFT JOIN (SELECT cluster_id, COUNT(*) AS n FROM faces WHERE cluster_id IS NOT NULL GROUP BY cluster_id) c
              ON c.cluster_id = p.id
            WHERE p.member_count != COALESCE(c.n, 0) ORDER BY p.id
            """).compactMap { $0[0].int.map(Int64.init) }
        for id in stale { try recompute(cluster: id, db) }
        return stale.count
    }

    /// Makes cluster `id`'s sum again from its members (see `recomputeStaleClusters`).
    static func recompute(cluster id: Int64, _ db: Database) throws(StoreError) {
        var sum = [Float](repeating: 0, count: FaceEmbedding.dimension)
        var count = 0
        try db.forEach("""
            SELECT f.embedding FROM faces f JOIN assets a ON a.id = f.asset_id WHERE f.cluster_id = ? AND f.embedding IS NOT NULL
            ORDER BY a.path, f.face_index
            """, [.integer(id)]) { (row) throws(StoreError) in
            guard let embedding = row[0].bytes.flatMap(FaceEmbedding.floats) else { return }
            for k in sum.indices { sum[k] += embedding[k] }
            count += 1
        }
        let person = Int64(try db.query("SELECT person FROM people WHERE id = ?", [.integer(id)]).first?.first?.int ?? Int(id))
        if count > 0 {
            try db.run("UPDATE people SET centroid_sum = ?, member_count = ? WHERE id = ?",
                       [.blob(FaceEmbedding.bytes(sum)), .integer(Int64(count)), .integer(id)])
        } else {
            let kept = try db.query("""
                SELECT name IS NOT NULL OR EXISTS (SELECT 1 FROM people o WHERE o.person = people.id AND o.id != people.id)
                FROM people WHERE id = ?
                """, [.integer(id)]).first?.first?.int ?? 0
            if kept != 0 {
                let old = try db.query("SELECT centroid_sum, member_count FROM people WHERE id = ?", [.integer(id)]).first
                if let old, let oldSum = old[0].bytes.flatMap(FaceEmbedding.floats), let oldCount = old[1].int, oldCount > 0 {
                    let centroid = oldSum.map { $0 / Float(oldCount) }
                    try db.run("UPDATE people SET centroid_sum = ?, member_count = 0 WHERE id = ?",
                               [.blob(FaceEmbedding.bytes(centroid)), .integer(id)])
                }
            } else {
                try db.run("DELETE FROM people WHERE id = ?", [.integer(id)])
            }
        }
        try chooseRepresentative(of: person, db)
    }

    /// Records as person `person`'s representative the face nearest its centroid (the mean of
    /// all its faces' embeddings, summed in path and face order; ties go to the first in that
    /// order); none when it has no face with an embedding.
    static func chooseRepresentative(of person: Int64, _ db: Database) throws(StoreError) {
        var members: [(id: Int64, embedding: [Float])] = []
        try db.forEach("""
            SELECT f.id, f.embedding FROM faces f JOIN people c ON c.id = f.cluster_id JOIN assets a ON a.id = f.asset_id
            WHERE c.person = ? AND f.embedding IS NOT NULL ORDER BY a.path, f.face_index
            """, [.integer(person)]) { (row) throws(StoreError) in
            if let id = row[0].int, let embedding = row[1].bytes.flatMap(FaceEmbedding.floats) { members.append((Int64(id), embedding)) }
        }
        var representative: SQLValue = .null
        if !members.isEmpty {
            var mean = [Float](repeating: 0, count: FaceEmbedding.dimension)
            for member in members { for k in mean.indices { mean[k] += member.embedding[k] } }
            for k in mean.indices { mean[k] /= Float(members.count) }
            var best = members[0]
            var bestDistance = FaceEmbedding.distance(best.embedding, mean)
            for member in members.dropFirst() {
                let distance = FaceEmbedding.distance(member.embedding, mean)
                if distance < bestDistance { (best, bestDistance) = (member, distance) }
            }
            representative = .integer(best.id)
        }
        try db.run("UPDATE people SET representative_face = ? WHERE id = ?", [representative, .integer(person)])
    }
}
