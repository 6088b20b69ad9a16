import AssetStore
import FaceClustering
import Foundation
import Testing

/// `photodrain people` and the people `verdicts` prints (issue 36 items 5 and 6).
@Suite struct PeopleCLITests {
    /// A library of three photos whose verdicts are banked with synthetic embeddings: a.jpg has
    /// identity 0, b.jpg identities 0 and 1, c.jpg identity 1. With `embeddings` false, the faces
    /// are banked without (no descriptor network configured).
    static func library(embeddings: Bool = true) throws -> Workspace {
        let ws = try Workspace()
        let photos = ["a.jpg": [0], "b.jpg": [0, 1], "c.jpg": [1]]
        for name in photos.keys { try ws.write(name, bytes: Array(name.utf8)) }
        let store = try AssetStore(root: ws.library, path: ws.store)
        _ = try store.scan()
        var synthetic = SyntheticFaces(seed: 17)
        for asset in try store.claimUnanalyzed(limit: 10).sorted(by: { $0.path < $1.path }) {
            let identities = photos[asset.path] ?? []
            var banked = BankedVerdict(json: #"{"label":"faces"}"#, label: "faces", faceCount: identities.count, score: 0.9)
            banked.faces = identities.enumerated().map { index, identity in
                BankedFace(index: index, x: 100 * index, y: 20, width: 64, height: 72,
                           embedding: embeddings ? synthetic.face(of: identity) : nil)
            }
            #expect(try store.bankVerdict(banked, for: asset))
        }
        return ws
    }

    static func people(_ ws: Workspace) throws -> [[String: Any]] {
        let run = try CLI.run(["people", ws.library, "--store", ws.store, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
    }

    @Test func listsPeopleWithTheirFacesAndKeepsDecisions() throws {
        let ws = try Self.library()
        let text = try CLI.run(["people", ws.library, "--store", ws.store])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("person 1: 2 faces, representative face"), "\(text.stdout)")
        #expect(text.stdout.contains("a.jpg  64x72 at 0,20"), "\(text.stdout)")
        #expect(text.stdout.contains("2 people; 4 faces, 4 in a person, 0 without an embedding; 4 clustered now (2 new people)"), "\(text.stdout)")

        var people = try Self.people(ws)
        #expect(people.map { $0["id"] as? Int } == [1, 2])
        #expect(people.map { $0["face_count"] as? Int } == [2, 2])
        let first = try #require(people[0]["faces"] as? [[String: Any]])
        #expect(first.map { $0["path"] as? String } == ["a.jpg", "b.jpg"])
        #expect(first[1]["box"] as? [Int] == [0, 20, 64, 72])
        #expect((people[0]["representative"] as? [String: Any])?["path"] != nil)

        // Person 1 is Anna; merging her with person 2 is refused (b.jpg has a face of each).
        #expect(try CLI.run(["people", "name", "1", "Anna", ws.library, "--store", ws.store]).status == 0)
        let merge = try CLI.run(["people", "merge", "1", "2", ws.library, "--store", ws.store])
        #expect(merge.status == 1)
        #expect(merge.stderr.contains("cannot-link") && merge.stderr.contains("b.jpg"), "\(merge.stderr)")
        // Forget person 2's face in c.jpg: it leaves, and stays out of the next listing.
        let cFace = try #require((people[1]["faces"] as? [[String: Any]])?.first { $0["path"] as? String == "c.jpg" }?["id"] as? Int)
        #expect(try CLI.run(["people", "forget", "\(cFace)", ws.library, "--store", ws.store]).status == 0)
        people = try Self.people(ws)
        #expect(people[0]["name"] as? String == "Anna")
        #expect(people[1]["face_count"] as? Int == 1)

        // verdicts prints each photo's people, in JSON lines and in CSV.
        let lines = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        let b = try #require(lines.lines.first { $0.contains(#""path":"b.jpg""#) })
        #expect(b.contains(#""people":[{"face":0,"name":"Anna","person":1},{"face":1,"person":2}]"#), "\(b)")
        let c = try #require(lines.lines.first { $0.contains(#""path":"c.jpg""#) })
        #expect(!c.contains(#""people""#), "\(c)")
        let csv = try CLI.run(["verdicts", ws.library, "--store", ws.store, "--format", "csv"])
        #expect(csv.lines.first?.hasSuffix(",sha256,people") == true)
        #expect(csv.lines.contains { $0.hasPrefix("b.jpg,") && $0.hasSuffix(",1:Anna;2") }, "\(csv.stdout)")
    }

    /// `analyze` that leaves nothing to analyse gives the new faces their people, so the uploads
    /// after it carry them without a `people` run.
    @Test func analyzeThatFinishesTheLibraryClustersItsFaces() throws {
        let ws = try Self.library()
        let before = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        #expect(!before.stdout.contains(#""people""#))
        let run = try CLI.run(["analyze", ws.library, "--store", ws.store])
        #expect(run.status == 0, "\(run.stderr)")
        let after = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        let b = try #require(after.lines.first { $0.contains(#""path":"b.jpg""#) })
        #expect(b.contains(#""people":[{"face":0,"person":1},{"face":1,"person":2}]"#), "\(b)")
    }

    @Test func withoutEmbeddingsNobodyIsListedAndItSaysWhy() throws {
        let ws = try Self.library(embeddings: false)
        let run = try CLI.run(["people", ws.library, "--store", ws.store])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("0 people; 4 faces, 0 in a person, 4 without an embedding"), "\(run.stdout)")
        #expect(run.stdout.contains("No face has an embedding yet"), "\(run.stdout)")
    }

    /// Faces analysed without descriptors (`--people off`, or before they existed) get them from
    /// their photos when `people` lists, the same as analysis gives, so the same people; a photo
    /// rewritten since its verdict is left for its next analysis, not embedded from other bytes.
    /// The sample photos as they are (faces big enough to align), not analysed.
    static func samples() throws -> Workspace {
        let ws = try Workspace()
        for name in try FileManager.default.contentsOfDirectory(atPath: CLI.repository.appendingPathComponent("SampleImages").path)
        where name.hasSuffix(".jpg") || name.hasSuffix(".png") {
            try ws.write(name, bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: CLI.sample(name)))))
        }
        return ws
    }

    /// `drain` and `wake` that leave nothing to analyse give the faces their people, as analyze
    /// does: `verdicts` (which reads the store, clustering nothing) shows them with no `people` run.
    @Test func drainAndWakeGivePeopleOnceEveryPhotoIsAnalysed() throws {
        func portraitsPeople(_ ws: Workspace) throws -> String? {
            try CLI.run(["verdicts", ws.library, "--store", ws.store]).lines.first { $0.contains(#""path":"three-portraits.jpg""#) }
        }
        let drained = try Self.samples()
        let server = try ServeProcess(directory: drained.root.appendingPathComponent("received").path)
        let drain = try CLI.run(["drain", drained.library, "--store", drained.store, "--to", server.url])
        #expect(drain.status == 0, "\(drain.stdout)\(drain.stderr)")
        let afterDrain = try #require(try portraitsPeople(drained))
        #expect(afterDrain.contains(#""people":[{"face":0,"person":"#) && afterDrain.contains(#"{"face":2,"person":"#), "\(afterDrain)")

        let woken = try Self.samples()
        let wake = try CLI.run(["wake", woken.library, "--store", woken.store, "--to", server.url])
        #expect(wake.stdout.contains("analysed 10"), "\(wake.stdout)\(wake.stderr)")
        let afterWake = try #require(try portraitsPeople(woken))
        #expect(afterWake.contains(#""people":[{"face":0,"person":"#) && afterWake.contains(#"{"face":2,"person":"#), "\(afterWake)")
    }

    @Test func facesAnalysedWithoutDescriptorsGetThemFromTheirPhotos() throws {
        func partition(_ ws: Workspace) throws -> Set<[String]> {
            Set(try Self.people(ws).map { ($0["faces"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }.sorted() })
        }
        let embedded = try Self.samples()
        #expect(try CLI.run(["analyze", embedded.library, "--store", embedded.store]).status == 0)
        let expected = try partition(embedded)
        #expect(expected.count == 3)

        let later = try Self.samples()
        #expect(try CLI.run(["analyze", later.library, "--store", later.store, "--people", "off"]).status == 0)
        let skipped = try CLI.run(["people", later.library, "--store", later.store, "--no-embed"])
        #expect(skipped.stdout.contains("0 people; 9 faces, 0 in a person, 9 without an embedding"), "\(skipped.stdout)")
        // hopper.jpg is rewritten after its verdict: its face is not embedded from the new bytes.
        try later.write("hopper.jpg", bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: CLI.sample("hopper-orientation-6.jpg")))))
        let listed = try CLI.run(["people", later.library, "--store", later.store])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stderr.contains("embedded 8 faces of 6 photos analysed before their faces had descriptors; 1 changed since"), "\(listed.stderr)")
        #expect(listed.stdout.contains("3 people; 9 faces, 8 in a person, 1 without an embedding"), "\(listed.stdout)")
        let withoutHopper = Set(expected.map { $0.filter { $0 != "hopper.jpg" } })
        #expect(try partition(later) == withoutHopper)
    }

    /// Each malformed command line, and the exit status it gets.
    static let misuse: [(arguments: [String], status: Int32)] = [
        (["people", "name", "x", "Anna"], 64),
        (["people", "merge", "1"], 64),
        (["people", "split"], 64),
        (["people", "a", "b"], 64),
        (["people", "name", "99", "Nobody"], 1),
        (["people", "forget", "99"], 1),
    ]

    @Test(arguments: 0..<6)
    func badIDsAndUsage(case index: Int) throws {
        let (arguments, status) = Self.misuse[index]
        let ws = try Self.library()
        let run = try CLI.run(arguments + (status == 1 ? [ws.library, "--store", ws.store] : []))
        #expect(run.status == status, "\(run.stdout) \(run.stderr)")
    }

    /// The benchmark's two runs, in memory and through a store, make the same people with the
    /// same ids (the store pages, writes and reads back), and recover the synthetic identities.
    @Test func theBenchMakesTheSamePartitionInMemoryAndThroughTheStore() throws {
        func report(_ extra: [String]) throws -> [String: Any] {
            let run = try CLI.run(["people", "bench", "--faces", "600", "--identities", "40", "--json"] + extra)
            #expect(run.status == 0, "\(run.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        }
        let memory = try report([]), store = try report(["--through-store"])
        #expect(memory["fingerprint"] as? String == store["fingerprint"] as? String)
        #expect(memory["people"] as? Int == 40 && store["people"] as? Int == 40)
        #expect(memory["pairPrecision"] as? Double == 1 && memory["pairRecall"] as? Double == 1)
        #expect((store["newPhotoPassMilliseconds"] as? Double ?? 0) > 0)
    }

    @Test func helpShowsEveryAction() throws {
        let run = try CLI.run(["people", "--help"])
        #expect(run.status == 0)
        for action in ["name ID NAME", "merge ID OTHER", "split FACE", "forget FACE"] { #expect(run.stdout.contains(action)) }
    }
}
