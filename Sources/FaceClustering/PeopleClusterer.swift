/// Incremental, deterministic clustering of face embeddings into people.
///
/// A *cluster* is a group of faces clustering made, kept as the sum of its members' embeddings
/// and their count; its centroid (sum / count) is what a new face is compared with, so one new
/// photo costs a pass over the clusters (each 128 Floats), never over the faces before it. A
/// cluster belongs to a *person* (`Cluster.person`): itself, or the person a user merged it into,
/// so a merge is remembered as a link and survives later clustering.
///
/// One photo at a time (`assign(photo:)`): every (face, cluster) pair whose centroid distance is
/// below the threshold is a candidate; candidates are taken nearest first (ties: lower face
/// index, then lower cluster id), a face joining the cluster of a pair unless it has joined one
/// already or the cluster's person already took a face of this photo (two faces of one photo are
/// never one person). A face left over starts a cluster of its own, with the next id.
///
/// Deterministic: the result depends only on the clusters given (in id order), the order photos
/// are given in, and the embeddings' bits. Distances are summed in a fixed order, ids come from a
/// counter, ties break by index and id, so the same library given in the same order (the store
/// gives photos by path) makes the same people with the same ids on every run and machine.
public struct PeopleClusterer: Sendable {
    /// One cluster's state: what the store keeps of it.
    public struct Cluster: Sendable, Equatable {
        /// The cluster's id; a person's id is its first cluster's.
        public var id: Int64
        /// The person it belongs to: its own id, or the person a user merged it into.
        public var person: Int64
        /// The sum of its members' embeddings (128 Floats), added in the order they joined.
        public var sum: [Float]
        /// How many faces the sum holds. 0: the cluster lost its faces (their photos changed) but is
        /// kept for its name or its merges, and `sum` is its last centroid, still matched.
        public var count: Int

        /// A cluster's state.
        public init(id: Int64, person: Int64, sum: [Float], count: Int) {
            self.id = id
            self.person = person
            self.sum = sum
            self.count = count
        }
    }

    /// Where one face of a photo went.
    public struct Assignment: Sendable, Equatable {
        /// The cluster it joined or started.
        public var cluster: Int64
        /// That cluster's person.
        public var person: Int64
        /// True when the face started the cluster (a new person).
        public var started: Bool
        /// The distance to the centroid it joined; nil when it started the cluster.
        public var distance: Float?
    }

    /// A face joins a cluster whose centroid is nearer than this (Euclidean).
    public let threshold: Float
    /// The id the next new cluster gets.
    public private(set) var nextID: Int64
    /// The ids of the clusters `assign` changed or made, for the store to write back.
    public private(set) var touched: Set<Int64> = []

    private var ids: [Int64] = []
    private var persons: [Int64] = []
    private var sums: [Float] = []
    private var counts: [Int] = []
    /// The centroids, cluster after cluster (`FaceEmbedding.dimension` Floats each): the search's
    /// one contiguous array.
    private var centroids: [Float] = []
    private var position: [Int64: Int] = [:]

    /// A clusterer holding `clusters` (any order: they are kept in id order) that gives new
    /// clusters ids from `nextID` on (raised past the highest id given).
    public init(clusters: [Cluster], nextID: Int64, threshold: Float = PeopleClusterer.defaultThreshold) {
        self.threshold = threshold
        self.nextID = max(nextID, (clusters.map(\.id).max() ?? 0) + 1)
        for cluster in clusters.sorted(by: { $0.id < $1.id }) where cluster.sum.count == FaceEmbedding.dimension {
            append(cluster)
        }
    }

    /// The threshold on the distance to a centroid: 0.55, measured, a little under dlib's
    /// published same-person distance (0.6, a threshold on pairs of faces). A centroid of many
    /// faces lies near their mean, and a stranger is nearer the mean than a face of theirs, so a
    /// pair threshold on centroids joins strangers: on real faces the descriptor was not trained
    /// on (`Scripts/measure-people-threshold`: 25 photos of one woman among 31 other people's
    /// faces), 0.55 is the largest threshold that put no other person's face with hers (23 of her
    /// 25 photos in one person), while 0.56 put one there and 0.6 three. Models/face-embedding.md
    /// has the table.
    public static let defaultThreshold: Float = 0.55

    /// The clusters, in id order.
    public var clusters: [Cluster] {
        ids.indices.map { Cluster(id: ids[$0], person: persons[$0], sum: Array(sums[$0 * Self.d..<($0 + 1) * Self.d]), count: counts[$0]) }
    }

    /// The state of cluster `id`; nil when there is none.
    public func cluster(_ id: Int64) -> Cluster? {
        guard let i = position[id] else { return nil }
        return Cluster(id: id, person: persons[i], sum: Array(sums[i * Self.d..<(i + 1) * Self.d]), count: counts[i])
    }

    /// Assigns the faces of one photo (each `FaceEmbedding.dimension` finite Floats; a face that is
    /// not gets no assignment, nil), each to a cluster it joins or starts (see the type).
    public mutating func assign(photo faces: [[Float]]) -> [Assignment?] {
        var result = [Assignment?](repeating: nil, count: faces.count)
        struct Candidate { var squared: Float; var face: Int; var index: Int }
        var candidates: [Candidate] = []
        let limit = threshold * threshold
        for (f, face) in faces.enumerated() where FaceEmbedding.isValid(face) {
            face.withUnsafeBufferPointer { query in
                centroids.withUnsafeBufferPointer { all in
                    for i in counts.indices {
                        if let squared = Self.squaredDistance(query, all, offset: i * Self.d, below: limit) {
                            candidates.append(Candidate(squared: squared, face: f, index: i))
                        }
                    }
                }
            }
        }
        candidates.sort { ($0.squared, $0.face, ids[$0.index]) < ($1.squared, $1.face, ids[$1.index]) }
        var takenPersons: Set<Int64> = []
        for candidate in candidates where result[candidate.face] == nil && !takenPersons.contains(persons[candidate.index]) {
            let i = candidate.index
            takenPersons.insert(persons[i])
            result[candidate.face] = Assignment(cluster: ids[i], person: persons[i], started: false, distance: candidate.squared.squareRoot())
        }
        // The sums change only once the photo is decided: its faces were all compared with the
        // clusters as they stood before it.
        for (f, face) in faces.enumerated() where FaceEmbedding.isValid(face) {
            if let joined = result[f], let i = position[joined.cluster] {
                add(face, to: i)
            } else {
                let id = nextID
                nextID += 1
                append(Cluster(id: id, person: id, sum: face, count: 1))
                result[f] = Assignment(cluster: id, person: id, started: true, distance: nil)
            }
        }
        for assignment in result { if let assignment { touched.insert(assignment.cluster) } }
        return result
    }

    private static let d = FaceEmbedding.dimension

    private mutating func append(_ cluster: Cluster) {
        position[cluster.id] = ids.count
        ids.append(cluster.id)
        persons.append(cluster.person)
        sums.append(contentsOf: cluster.sum)
        counts.append(cluster.count)
        centroids.append(contentsOf: Self.centroid(sum: cluster.sum[...], count: cluster.count))
    }

    private mutating func add(_ face: [Float], to i: Int) {
        let base = i * Self.d
        // An emptied cluster's sum is its last centroid: its first new face starts the sum again.
        if counts[i] == 0 { sums.replaceSubrange(base..<base + Self.d, with: face) } else {
            for k in 0..<Self.d { sums[base + k] += face[k] }
        }
        counts[i] += 1
        let mean = Self.centroid(sum: sums[base..<base + Self.d], count: counts[i])
        centroids.replaceSubrange(base..<base + Self.d, with: mean)
    }

    /// The centroid of a cluster: each coordinate of the sum divided by the count (the sum
    /// itself for an emptied cluster, whose sum is its last centroid).
    static func centroid(sum: ArraySlice<Float>, count: Int) -> [Float] {
        let n = Float(max(count, 1))
        return sum.map { $0 / n }
    }

    /// The squared distance between `query` and the centroid at `offset` in `all`, or nil as soon
    /// as it reaches `limit` (the partial sums only grow, so nil is exact). Sixteen lanes summed in
    /// a fixed order: the same bits in every build and on every processor.
    @inline(__always)
    static func squaredDistance(_ query: UnsafeBufferPointer<Float>, _ all: UnsafeBufferPointer<Float>, offset: Int,
                                below limit: Float) -> Float? {
        guard let q = query.baseAddress, let c = all.baseAddress.map({ $0 + offset }) else { return nil }
        let qr = UnsafeRawPointer(q), cr = UnsafeRawPointer(c)
        var lanes = SIMD16<Float>()
        var k = 0
        // Checked once half way: a stranger's centroid is usually past the limit by then.
        while k < d {
            for step in 0..<4 {
                let bytes = (k + step * 16) * MemoryLayout<Float>.stride
                let diff = qr.loadUnaligned(fromByteOffset: bytes, as: SIMD16<Float>.self)
                    - cr.loadUnaligned(fromByteOffset: bytes, as: SIMD16<Float>.self)
                lanes += diff * diff
            }
            k += 64
            var partial: Float = 0
            for lane in 0..<16 { partial += lanes[lane] }
            if partial >= limit { return nil }
            if k == d { return partial }
        }
        return nil
    }
}
