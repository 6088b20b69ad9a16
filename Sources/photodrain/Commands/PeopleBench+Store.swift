import AssetStore
import FaceClustering
import Foundation
import SystemSupport

/// `photodrain people bench --through-store`: the same synthetic photos as files of a library,
/// banked with their faces in a store, clustered by the store's pass; then one new photo at a
/// time, as a library grows, each clustered by a pass of its own.
extension PeopleBench {
    /// The figures of a run through the store.
    struct StoreReport: Encodable {
        let faces: Int
        let photos: Int
        let people: Int
        /// Banking every photo's verdict and faces (a transaction each), in seconds.
        let bankSeconds: Double
        /// The first pass, over every face, in seconds.
        let firstPassSeconds: Double
        /// The median pass after one new photo of two faces, in milliseconds.
        let newPhotoPassMilliseconds: Double
        let peakResidentMiB: Double
        /// As the in-memory run's: equal when the store makes the same people with the same ids.
        let fingerprint: String
    }

    static func runThroughStore(faces total: Int, identities: Int, json: Bool) throws -> ExitCode {
        let report = try measureThroughStore(faces: total, identities: identities)
        if json {
            Console.shared.json(report)
        } else {
            Console.shared.out("""
                \(report.faces) faces in \(report.photos) photos, through the store -> \(report.people) people
                banking \(String(format: "%.2f", report.bankSeconds)) s; first pass \(String(format: "%.2f", report.firstPassSeconds)) s; a new photo's pass \(String(format: "%.2f", report.newPhotoPassMilliseconds)) ms (median of 9)
                peak resident \(String(format: "%.1f", report.peakResidentMiB)) MiB
                partition fingerprint \(report.fingerprint)
                """)
        }
        return .success
    }

    static func measureThroughStore(faces total: Int, identities: Int) throws -> StoreReport {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pd-people-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = folder.appendingPathComponent("library")
        try FileManager.default.createDirectory(at: library.appendingPathComponent("p"), withIntermediateDirectories: true)
        func name(_ n: Int) -> String { String(format: "p/%07d.jpg", n) }
        // The photos as the in-memory run makes them; their files hold their number.
        var synthetic = SyntheticFaces(seed: 36)
        var photos = 0, faces = 0
        while faces < total {
            faces += nextPhoto(&synthetic, identities: identities, remaining: total - faces).members.count
            try Data("\(photos)".utf8).write(to: library.appendingPathComponent(name(photos)))
            photos += 1
        }
        let store = try AssetStore(root: library.path, path: folder.appendingPathComponent("store.sqlite").path)
        _ = try store.scan()
        let clock = ContinuousClock()
        var claimed: [String: AssetRecord] = [:]
        for asset in try store.claimUnanalyzed(limit: photos) { claimed[asset.path] = asset }
        synthetic = SyntheticFaces(seed: 36)
        faces = 0
        let bankStart = clock.now
        for n in 0..<photos {
            let photo = nextPhoto(&synthetic, identities: identities, remaining: total - faces)
            faces += photo.members.count
            guard let asset = claimed[name(n)] else { continue }
            try store.bankVerdict(verdict(photo.faces), for: asset)
        }
        let bankSeconds = (clock.now - bankStart).milliseconds / 1000
        let firstStart = clock.now
        try store.clusterFaces()
        let firstPassSeconds = (clock.now - firstStart).milliseconds / 1000
        var persons: [Int64] = []
        let byPath = try store.facesWithPeople()
        for path in byPath.keys.sorted() { persons += (byPath[path] ?? []).map { $0.person ?? -1 } }
        let people = Set(persons).count
        // New photos, one at a time, as a library grows.
        var passes: [Double] = []
        for extra in 0..<9 {
            let path = "q/\(extra).jpg"
            try FileManager.default.createDirectory(at: library.appendingPathComponent("q"), withIntermediateDirectories: true)
            try Data("new \(extra)".utf8).write(to: library.appendingPathComponent(path))
            _ = try store.scan()
            guard let asset = try store.claimUnanalyzed(limit: 1).first else { continue }
            try store.bankVerdict(verdict([synthetic.face(of: extra), synthetic.face(of: identities + extra)]), for: asset)
            let start = clock.now
            try store.clusterFaces()
            passes.append((clock.now - start).milliseconds)
        }
        return StoreReport(faces: total, photos: photos, people: people, bankSeconds: bankSeconds, firstPassSeconds: firstPassSeconds,
                           newPhotoPassMilliseconds: passes.sorted()[passes.count / 2],
                           peakResidentMiB: Double(peakResidentBytes()) / 1_048_576, fingerprint: fingerprint(persons))
    }

    /// A verdict with a confirmed face per embedding.
    static func verdict(_ embeddings: [[Float]]) -> BankedVerdict {
        var banked = BankedVerdict(json: #"{"label":"faces"}"#, label: "faces", faceCount: embeddings.count, score: 0.9)
        banked.faces = embeddings.enumerated().map { BankedFace(index: $0.offset, x: 0, y: 0, width: 64, height: 64, embedding: $0.element) }
        return banked
    }
}
