import FaceClustering
import Foundation
import SystemSupport

/// `photodrain people bench`: clusters synthetic faces photo by photo, as a library's faces
/// arrive, and reports the time, the peak resident set, how well the people match the identities,
/// and a fingerprint of the partition (the same on every run and machine). BENCHMARKS.md records it.
enum PeopleBench {
    /// The figures of one run.
    struct Report: Encodable {
        let faces: Int
        let photos: Int
        let identities: Int
        let people: Int
        let seconds: Double
        let facesPerSecond: Double
        /// The mean time to cluster one photo among the last tenth, when the clusters are nearly all there.
        let lastPhotosMilliseconds: Double
        /// The largest resident set of the process (VmHWM), in MiB.
        let peakResidentMiB: Double
        /// Of the pairs of faces put in one person, the share that are one identity.
        let pairPrecision: Double
        /// Of the pairs of faces of one identity, the share put in one person.
        let pairRecall: Double
        /// FNV-1a of every face's person, in order: equal runs give equal partitions and ids.
        let fingerprint: String
    }

    static func run(faces total: Int, identities: Int, json: Bool) throws -> ExitCode {
        let report = measure(faces: total, identities: identities)
        if json {
            Console.shared.json(report)
        } else {
            Console.shared.out("""
                \(report.faces) faces in \(report.photos) photos of \(report.identities) identities -> \(report.people) people
                time \(String(format: "%.2f", report.seconds)) s (\(Int(report.facesPerSecond)) faces/s; \(String(format: "%.3f", report.lastPhotosMilliseconds)) ms per photo at the end)
                peak resident \(String(format: "%.1f", report.peakResidentMiB)) MiB
                pairs: precision \(String(format: "%.4f", report.pairPrecision)), recall \(String(format: "%.4f", report.pairRecall))
                partition fingerprint \(report.fingerprint)
                """)
        }
        return .success
    }

    /// Clusters `total` faces: photos of 1 to 4 distinct identities (drawn from `identities`),
    /// each face made when its photo arrives, so only the clusterer's state is held.
    static func measure(faces total: Int, identities: Int) -> Report {
        var synthetic = SyntheticFaces(seed: 36)
        var clusterer = PeopleClusterer(clusters: [], nextID: 1)
        var truth: [Int32] = [], assigned: [Int64] = []
        truth.reserveCapacity(total)
        assigned.reserveCapacity(total)
        var photos = 0
        var lastTenth: Duration = .zero, lastTenthPhotos = 0
        var clustering: Duration = .zero
        let clock = ContinuousClock()
        while truth.count < total {
            let (members, embeddings) = nextPhoto(&synthetic, identities: identities, remaining: total - truth.count)
            let start = clock.now
            let result = clusterer.assign(photo: embeddings)
            let took = clock.now - start
            clustering += took
            if truth.count >= total - total / 10 {
                lastTenth += took
                lastTenthPhotos += 1
            }
            photos += 1
            truth.append(contentsOf: members.map { Int32($0) })
            assigned.append(contentsOf: result.map { $0?.person ?? -1 })
        }
        let seconds = clustering.milliseconds / 1000
        let (precision, recall) = pairScores(truth: truth, assigned: assigned)
        return Report(faces: total, photos: photos, identities: identities, people: Set(assigned).count, seconds: seconds,
                      facesPerSecond: Double(total) / max(seconds, 1e-9),
                      lastPhotosMilliseconds: lastTenth.milliseconds / Double(max(lastTenthPhotos, 1)),
                      peakResidentMiB: Double(peakResidentBytes()) / 1_048_576, pairPrecision: precision, pairRecall: recall,
                      fingerprint: fingerprint(assigned))
    }

    /// The next synthetic photo: 1 to 4 distinct identities and a face of each.
    static func nextPhoto(_ synthetic: inout SyntheticFaces, identities: Int, remaining: Int) -> (members: [Int], faces: [[Float]]) {
        let size = min(1 + synthetic.below(4), remaining, identities)
        var members: [Int] = []
        while members.count < size {
            let identity = synthetic.below(identities)
            if !members.contains(identity) { members.append(identity) }
        }
        return (members, members.map { synthetic.face(of: $0) })
    }

    /// FNV-1a of the persons, in order.
    static func fingerprint(_ persons: [Int64]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for person in persons {
            withUnsafeBytes(of: person.littleEndian) { for byte in $0 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 } }
        }
        return String(hash, radix: 16)
    }

    /// Pairwise precision and recall of `assigned` against `truth`, from the contingency counts.
    static func pairScores(truth: [Int32], assigned: [Int64]) -> (Double, Double) {
        func pairs(_ n: Int) -> Double { Double(n) * Double(n - 1) / 2 }
        var both: [Int64: [Int32: Int]] = [:], byTruth: [Int32: Int] = [:], byPerson: [Int64: Int] = [:]
        for (identity, person) in zip(truth, assigned) {
            both[person, default: [:]][identity, default: 0] += 1
            byTruth[identity, default: 0] += 1
            byPerson[person, default: 0] += 1
        }
        let together = both.values.reduce(0.0) { sum, row in row.values.reduce(sum) { $0 + pairs($1) } }
        let predicted = byPerson.values.reduce(0.0) { $0 + pairs($1) }
        let actual = byTruth.values.reduce(0.0) { $0 + pairs($1) }
        return (predicted > 0 ? together / predicted : 1, actual > 0 ? together / actual : 1)
    }

    /// The process's peak resident set (VmHWM in /proc/self/status), in bytes; 0 when unknown.
    static func peakResidentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return 0 }
        return kib * 1024
    }
}
