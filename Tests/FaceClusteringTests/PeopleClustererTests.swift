import Testing
@testable import FaceClustering

/// A synthetic library: `identities` people, each in `perIdentity` photos of one face, and
/// `groups` group photos holding one face of each of `groupSize` consecutive identities.
private func library(seed: UInt64, identities: Int, perIdentity: Int, groups: Int = 0, groupSize: Int = 3) -> [(key: String, faces: [[Float]], truth: [Int])] {
    var faces = SyntheticFaces(seed: seed)
    var photos: [(key: String, faces: [[Float]], truth: [Int])] = []
    for identity in 0..<identities {
        for n in 0..<perIdentity {
            photos.append(("p\(identity)-\(n)", [faces.face(of: identity)], [identity]))
        }
    }
    for g in 0..<groups {
        let members = (0..<groupSize).map { (g + $0) % identities }
        photos.append(("g\(g)", members.map { faces.face(of: $0) }, members))
    }
    return photos
}

/// Clusters `photos` in the order given, from nothing, and returns each face's person.
private func cluster(_ photos: [(key: String, faces: [[Float]], truth: [Int])], threshold: Float = PeopleClusterer.defaultThreshold) -> [String: [Int64]] {
    var clusterer = PeopleClusterer(clusters: [], nextID: 1, threshold: threshold)
    var out: [String: [Int64]] = [:]
    for photo in photos {
        out[photo.key] = clusterer.assign(photo: photo.faces).map { $0?.person ?? -1 }
    }
    return out
}

@Suite struct PeopleClustererTests {
    @Test func syntheticIdentitiesStraddleThePublishedDistance() {
        var faces = SyntheticFaces(seed: 7)
        var same: [Float] = [], different: [Float] = []
        for identity in 0..<40 {
            same.append(FaceEmbedding.distance(faces.face(of: identity), faces.face(of: identity)))
            different.append(FaceEmbedding.distance(faces.face(of: identity), faces.face(of: identity + 40)))
        }
        #expect(same.max()! < 0.6)
        #expect(different.min()! > 0.6)
    }

    @Test func twoFacesOfOnePhotoStayApartEvenWhenTheyAreTheSamePerson() {
        var faces = SyntheticFaces(seed: 3)
        var clusterer = PeopleClusterer(clusters: [], nextID: 1)
        _ = clusterer.assign(photo: [faces.face(of: 0)])
        // A mirror, a photo of a photo: two faces of identity 0 in one photo.
        let twins = clusterer.assign(photo: [faces.face(of: 0), faces.face(of: 0)])
        let persons = twins.compactMap { $0?.person }
        #expect(persons.count == 2)
        #expect(persons[0] != persons[1])
        #expect(persons.contains(1))
        #expect(twins.filter { $0?.started == true }.count == 1)
    }

    @Test func theNearerFaceOfAPhotoWinsTheSharedPerson() {
        var faces = SyntheticFaces(seed: 5)
        let centre = faces.centre(of: 0)
        var clusterer = PeopleClusterer(clusters: [], nextID: 10)
        _ = clusterer.assign(photo: [centre])
        // Face 0 is farther from person 10 than face 1: face 1 joins, face 0 starts person 11.
        let far = centre.enumerated().map { $0.offset == 0 ? $0.element + 0.4 : $0.element }
        let near = centre.enumerated().map { $0.offset == 0 ? $0.element + 0.1 : $0.element }
        let result = clusterer.assign(photo: [far, near])
        #expect(result[1]?.person == 10)
        #expect(result[0]?.person == 11)
        #expect(result[0]?.started == true)
    }

    @Test func recoversTheIdentities() {
        let photos = library(seed: 11, identities: 30, perIdentity: 12, groups: 20)
        let assigned = cluster(photos)
        // Each identity's faces are one person, and no person holds two identities.
        var personOf: [Int: Set<Int64>] = [:], identitiesOf: [Int64: Set<Int>] = [:]
        for photo in photos {
            for (person, identity) in zip(assigned[photo.key]!, photo.truth) {
                personOf[identity, default: []].insert(person)
                identitiesOf[person, default: []].insert(identity)
            }
        }
        #expect(personOf.values.allSatisfy { $0.count == 1 })
        #expect(identitiesOf.values.allSatisfy { $0.count == 1 })
        #expect(identitiesOf.count == 30)
    }

    @Test func twoRunsMakeTheSamePeopleWithTheSameIDs() {
        let photos = library(seed: 21, identities: 25, perIdentity: 8, groups: 10)
        var shuffled = SyntheticFaces(seed: 99)
        let order = photos.indices.map { ($0, shuffled.next()) }.sorted { $0.1 < $1.1 }.map { photos[$0.0] }
        // The store hands photos in path order: the same library sorted from any arrival order.
        let first = cluster(photos.sorted { $0.key < $1.key })
        let second = cluster(order.sorted { $0.key < $1.key })
        #expect(first == second)
        // And the state a later run resumes from gives the same result as one run.
        let sorted = photos.sorted { $0.key < $1.key }
        var resumed = PeopleClusterer(clusters: [], nextID: 1)
        var out: [String: [Int64]] = [:]
        for photo in sorted.prefix(100) { out[photo.key] = resumed.assign(photo: photo.faces).map { $0?.person ?? -1 } }
        var again = PeopleClusterer(clusters: resumed.clusters, nextID: resumed.nextID)
        for photo in sorted.dropFirst(100) { out[photo.key] = again.assign(photo: photo.faces).map { $0?.person ?? -1 } }
        #expect(out == first)
    }

    @Test func aMergedClusterStillFindsItsPerson() {
        var faces = SyntheticFaces(seed: 8)
        var clusterer = PeopleClusterer(clusters: [], nextID: 1)
        _ = clusterer.assign(photo: [faces.face(of: 0)])
        _ = clusterer.assign(photo: [faces.face(of: 1)])
        // The user said 2 is person 1: the store hands cluster 2 back with person 1.
        var state = clusterer.clusters
        state[1].person = 1
        var resumed = PeopleClusterer(clusters: state, nextID: clusterer.nextID)
        #expect(resumed.assign(photo: [faces.face(of: 1)]).first??.person == 1)
        // One photo with faces of both merged clusters: still never one person twice.
        let both = resumed.assign(photo: [faces.face(of: 0), faces.face(of: 1)])
        #expect(Set(both.compactMap { $0?.person }).count == 2)
    }

    @Test(arguments: [Float(0.5), 0.6, 0.7])
    func thresholdsAroundThePublishedDistanceKeepHeldOutIdentitiesApart(threshold: Float) {
        // Held-out identities (a seed no other test uses): the partition is pure and complete.
        let photos = library(seed: 1234, identities: 20, perIdentity: 10, groups: 5)
        let assigned = cluster(photos, threshold: threshold)
        var pairs = (sameAndTogether: 0, same: 0, differentAndTogether: 0)
        let flat = photos.flatMap { photo in zip(assigned[photo.key]!, photo.truth).map { $0 } }
        for i in flat.indices { for j in flat.indices where j > i {
            if flat[i].1 == flat[j].1 { pairs.same += 1; if flat[i].0 == flat[j].0 { pairs.sameAndTogether += 1 } }
            else if flat[i].0 == flat[j].0 { pairs.differentAndTogether += 1 }
        } }
        #expect(pairs.differentAndTogether == 0)
        #expect(Double(pairs.sameAndTogether) / Double(pairs.same) > 0.99)
    }

    @Test func embeddingBytesRoundTripLittleEndian() {
        var faces = SyntheticFaces(seed: 2)
        let face = faces.face(of: 4)
        let bytes = FaceEmbedding.bytes(face)
        #expect(bytes.count == 512)
        #expect(FaceEmbedding.floats(bytes) == face)
        #expect(Array(FaceEmbedding.bytes([1.0] + Array(repeating: 0, count: 127)).prefix(4)) == [0, 0, 0x80, 0x3F])
        #expect(FaceEmbedding.floats(Array(bytes.dropLast())) == nil)
    }

    @Test func anInvalidEmbeddingIsNotAssigned() {
        var clusterer = PeopleClusterer(clusters: [], nextID: 1)
        let result = clusterer.assign(photo: [[Float](repeating: .nan, count: 128), [1, 2, 3]])
        #expect(result == [nil, nil])
        #expect(clusterer.clusters.isEmpty)
    }
}
