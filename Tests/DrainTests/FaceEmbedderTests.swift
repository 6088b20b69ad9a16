import AssetStore
import Drain
import FaceAnalysis
import Foundation
import PhotoAnalysis
import PhotoDecoding
import Synchronization
import Testing

/// The seam for the descriptor network: an embedder gets the analysed image and the confirmed
/// faces, its embeddings are banked with the verdict's face rows, and clustering gives them people.
@Suite struct FaceEmbedderTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Gives each face an embedding made from its box, and records what it was handed.
    final class BoxEmbedder: FaceEmbedder {
        let calls = Mutex<[(width: Int, height: Int, faces: Int)]>([])
        let extra: Int

        init(extra: Int = 0) { self.extra = extra }

        func embeddings(image: Image, faces: [Verdict.Face]) -> [[Float]] {
            calls.withLock { $0.append((image.width, image.height, faces.count)) }
            return (faces + faces.prefix(extra)).enumerated().map { index, face in
                (0..<128).map { Float(($0 * 7 + index * 31 + face.region.x) % 97) / 97 }
            }
        }
    }

    static func pipeline(_ embedder: (any FaceEmbedder)?) throws -> FacePipeline {
        let models = repository.appendingPathComponent("Models")
        var pipeline = try FacePipeline(settings: AnalysisSettings(modelPath: models.appendingPathComponent(AnalysisSettings.verdictModelFile).path,
                                                                   networkPath: models.appendingPathComponent(AnalysisSettings.networkFile).path))
        pipeline.embedder = embedder
        return pipeline
    }

    /// A library holding the sample astronaut photo, scanned, and its claimed row.
    static func library() throws -> (folder: URL, store: AssetStore, asset: AssetRecord, path: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pd-embed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("library"), withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("library/astronaut.png").path
        try FileManager.default.copyItem(atPath: repository.appendingPathComponent("SampleImages/astronaut.png").path, toPath: path)
        let store = try AssetStore(root: folder.appendingPathComponent("library").path, path: folder.appendingPathComponent("store.sqlite").path)
        _ = try store.scan()
        guard let asset = try store.claimUnanalyzed(limit: 1).first else { throw StoreError(.notFound, "no photo to claim") }
        return (folder, store, asset, path)
    }

    @Test func embeddingsAreBankedWithTheFacesAndClustered() throws {
        let (folder, store, asset, path) = try Self.library()
        defer { try? FileManager.default.removeItem(at: folder) }
        let embedder = BoxEmbedder()
        guard case .verdict(let analysed) = try Self.pipeline(embedder).analyze(path: path, memoryBudget: nil) else {
            Issue.record("deferred with no memory limit")
            return
        }
        let confirmed = analysed.verdict.confirmedFaces
        try #require(confirmed > 0)
        let call = try #require(embedder.calls.withLock { $0.first })
        #expect(call.faces == confirmed)
        #expect(call.width == analysed.verdict.analysisSize?.width && call.height == analysed.verdict.analysisSize?.height)
        #expect(analysed.faceEmbeddings?.count == confirmed)
        #expect(try store.bankVerdict(analysed, for: asset))
        let faces = try store.faces(ofPhoto: "astronaut.png")
        #expect(faces.count == confirmed)
        let first = try #require(analysed.verdict.faces.first { $0.confirmed })
        #expect(faces[0].face.x == first.region.x && faces[0].face.width == first.region.width)
        #expect(faces[0].face.keypoints == first.region.keypoints)
        let pass = try store.clusterFaces()
        #expect(pass.started == confirmed)
        #expect(try store.faces(ofPhoto: "astronaut.png").allSatisfy { $0.person != nil })
    }

    /// A face too small to tell who it is (`FaceChip.minimumFaceSize`) is banked without a
    /// descriptor and never waits for one, while the photo's bigger faces get theirs.
    @Test func aFaceTooSmallToTellWhoIsKeptWithoutADescriptor() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pd-embed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("library"), withIntermediateDirectories: true)
        // three-portraits.jpg at 0.8 of its size: its faces become about 50, 82 and 139 pixels wide.
        let original = try PhotoDecoder.decode(Self.repository.appendingPathComponent("SampleImages/three-portraits.jpg").path,
                                               options: DecodeOptions(output: .rgb))
        let smaller = Resize.bilinear(original, width: original.width * 4 / 5, height: original.height * 4 / 5)
        let path = folder.appendingPathComponent("library/portraits.jpg").path
        try Data(try ImageEncoder.jpeg(smaller, quality: 92)).write(to: URL(fileURLWithPath: path))
        let store = try AssetStore(root: folder.appendingPathComponent("library").path, path: folder.appendingPathComponent("store.sqlite").path)
        _ = try store.scan()
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        let embedder = BoxEmbedder()
        guard case .verdict(let analysed) = try Self.pipeline(embedder).analyze(path: path, memoryBudget: nil) else {
            Issue.record("deferred with no memory limit")
            return
        }
        let widths = analysed.verdict.faces.filter(\.confirmed).map(\.region.width)
        try #require(widths.count == 3 && widths.filter { $0 < FaceChip.minimumFaceSize }.count == 1, "confirmed widths \(widths)")
        // The embedder saw the two big faces only; the small one's place is empty.
        #expect(embedder.calls.withLock { $0.map(\.faces) } == [2])
        let embeddings = try #require(analysed.faceEmbeddings)
        #expect(embeddings.map(\.isEmpty) == widths.map { $0 < FaceChip.minimumFaceSize })
        #expect(try store.bankVerdict(analysed, for: asset))
        #expect(try store.clusterFaces().started == 2)
        let tally = try store.faceTally(minimumFaceSize: FaceChip.minimumFaceSize)
        #expect(tally.faces == 3 && tally.clustered == 2 && tally.withoutEmbedding == 1 && tally.tooSmall == 1)
        // Nothing waits for a descriptor: the small face is not one to give one.
        #expect(try store.photosToEmbedCount(minimumFaceSize: FaceChip.minimumFaceSize) == 0)
        #expect(try store.photosToEmbedCount(minimumFaceSize: 0) == 1)
    }

    /// The descriptor network run with one kernel set, as analysis runs it with the fastest.
    struct KernelSetEmbedder: FaceEmbedder {
        let network: FaceDescriptorNetwork
        let kernels: NetworkWorkspace.Kernels

        func embeddings(image: Image, faces: [Verdict.Face]) -> [[Float]] {
            let found = network.embeddings(image: image, faces: faces, in: FaceDescriptorWorkspace(network: network, kernels: kernels))
            return found.allSatisfy { $0 != nil } ? found.compactMap { $0 } : []
        }
    }

    /// The same library makes the same people, ids and all, whichever kernel set this processor
    /// runs the descriptor network with (issue 36: the same people on every machine).
    @Test(.enabled(if: NetworkWorkspace.Kernels.allCases.filter(\.isSupported).count >= 2, "needs a second kernel set to compare"))
    func everyKernelSetMakesTheSamePeople() throws {
        let network = try FaceDescriptorNetwork(contentsOf: Self.repository.appendingPathComponent("Models/\(FaceDescriptorNetwork.fileName)").path)
        let sets = NetworkWorkspace.Kernels.allCases.filter(\.isSupported)
        var partitions: [NetworkWorkspace.Kernels: [Int64: [String]]] = [:]
        for kernels in sets {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pd-kernels-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let library = folder.appendingPathComponent("library")
            try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
            for name in try FileManager.default.contentsOfDirectory(atPath: Self.repository.appendingPathComponent("SampleImages").path)
            where name.hasSuffix(".jpg") || name.hasSuffix(".png") {
                try FileManager.default.copyItem(atPath: Self.repository.appendingPathComponent("SampleImages/\(name)").path,
                                                 toPath: library.appendingPathComponent(name).path)
            }
            let store = try AssetStore(root: library.path, path: folder.appendingPathComponent("store.sqlite").path)
            _ = try store.scan()
            let pipeline = try Self.pipeline(KernelSetEmbedder(network: network, kernels: kernels))
            for asset in try store.claimUnanalyzed(limit: 100) {
                guard case .verdict(let analysed) = pipeline.analyze(path: library.appendingPathComponent(asset.path).path, memoryBudget: nil) else {
                    Issue.record("\(asset.path) deferred with no memory limit")
                    continue
                }
                #expect(try store.bankVerdict(analysed, for: asset))
            }
            _ = try store.clusterFaces()
            partitions[kernels] = Dictionary(uniqueKeysWithValues: try store.people().map { ($0.id, $0.faces.map { "\($0.path)#\($0.face.index)" }) })
        }
        let first = try #require(partitions[sets[0]])
        #expect(first.count == 3 && first.values.reduce(0) { $0 + $1.count } == 9, "\(first)")
        for kernels in sets.dropFirst() { #expect(partitions[kernels] == first, "\(kernels) made other people than \(sets[0])") }
    }

    @Test(arguments: [false, true])
    func withoutUsableEmbeddingsTheFacesAreStillBanked(malformed: Bool) throws {
        let (folder, store, asset, path) = try Self.library()
        defer { try? FileManager.default.removeItem(at: folder) }
        // No embedder (the default until the network is in), or one that gives one too many.
        guard case .verdict(let analysed) = try Self.pipeline(malformed ? BoxEmbedder(extra: 1) : nil).analyze(path: path, memoryBudget: nil) else {
            Issue.record("deferred with no memory limit")
            return
        }
        try #require(analysed.verdict.confirmedFaces > 0)
        #expect(analysed.faceEmbeddings == nil)
        #expect(try store.bankVerdict(analysed, for: asset))
        #expect(try store.faces(ofPhoto: "astronaut.png").count == analysed.verdict.confirmedFaces)
        #expect(try store.clusterFaces() == ClusteringPass())
        #expect(try store.people().isEmpty)
    }
}
