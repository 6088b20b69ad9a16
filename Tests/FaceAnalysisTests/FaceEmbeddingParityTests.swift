import FaceAnalysis
import Foundation
import Testing

/// dlib's face descriptor in Swift against dlib itself (dlib-bin 20.0.1), on the chips and
/// descriptors `Scripts/make-face-embedding-fixtures` recorded: dlib's own 150x150 chips of the
/// faces its detector finds in SampleImages/.
@Suite struct FaceEmbeddingParityTests {
    struct Reference: Decodable {
        struct Face: Decodable {
            var photo: String
            var landmarks: [[Double]]
            var descriptor: [Float]
        }
        var network: String
        var faces: [String: Face]
    }

    static let directory = Fixtures.directory + "/embedding"

    static func reference() throws -> Reference {
        try JSONDecoder().decode(Reference.self, from: Data(try Fixtures.readAll(directory + "/reference.json")))
    }

    static let faces = ["hopper-0", "astronaut-0", "astronaut-1", "three-portraits-0", "three-portraits-1"]
    static let kernelSets = NetworkWorkspace.Kernels.allCases.filter(\.isSupported)

    static func network(_ precision: FaceDescriptorNetwork.Precision = FaceDescriptorNetwork.preferredPrecision) throws -> FaceDescriptorNetwork {
        try FaceDescriptorNetwork(contentsOf: Fixtures.modelsDirectory + "/" + FaceDescriptorNetwork.fileName, precision: precision)
    }

    static func chip(_ name: String) throws -> FaceChip {
        try FaceChip(rgb: Fixtures.readAll(directory + "/\(name).rgb"))
    }

    static func cosine(_ a: [Float], _ b: [Float]) -> Double {
        var dot = 0.0, na = 0.0, nb = 0.0
        for i in a.indices {
            dot += Double(a[i]) * Double(b[i]); na += Double(a[i]) * Double(a[i]); nb += Double(b[i]) * Double(b[i])
        }
        return dot / (na.squareRoot() * nb.squareRoot())
    }

    @Test("the fixtures were made from the shipped weights")
    func fixturesMatchWeights() throws {
        #expect(try Self.reference().network == Self.network().identifier)
    }

    @Test("descriptors match dlib's within cosine 0.999 (int16)", arguments: faces, kernelSets)
    func descriptorsMatchDlib(name: String, kernels: NetworkWorkspace.Kernels) throws {
        try Self.checkParity(name: name, kernels: kernels, network: try Self.network(.int16))
    }

    @Test("descriptors match dlib's within cosine 0.999 (fp32)", arguments: faces, kernelSets)
    func floatDescriptorsMatchDlib(name: String, kernels: NetworkWorkspace.Kernels) throws {
        try Self.checkParity(name: name, kernels: kernels, network: try Self.network(.fp32))
    }

    static func checkParity(name: String, kernels: NetworkWorkspace.Kernels, network: FaceDescriptorNetwork) throws {
        let want = try #require(try Self.reference().faces[name]).descriptor
        let workspace = FaceDescriptorWorkspace(network: network, kernels: kernels)
        #expect(workspace.kernels == kernels)
        let got = network.embedding(chip: try Self.chip(name), in: workspace)
        #expect(got.count == FaceDescriptorNetwork.dimensions)
        let cosine = Self.cosine(got, want)
        let distance = FaceDescriptorNetwork.distance(got, want)
        #expect(cosine >= 0.999, "\(name) with \(kernels), \(network.precision): cosine \(cosine)")
        // dlib's own threshold is 0.6: the same chip must be far inside it.
        #expect(distance < 0.01, "\(name) with \(kernels), \(network.precision): distance \(distance)")
        if ProcessInfo.processInfo.environment["PHOTODRAIN_PARITY_REPORT"] != nil {
            print("parity \(name) \(kernels) \(network.precision): cosine \(cosine) distance \(distance)")
        }
    }

    @Test("AVX2 and AVX-512 give the same bits", .enabled(if: NetworkWorkspace.Kernels.avx2.isSupported && NetworkWorkspace.Kernels.avx512.isSupported,
                                                          "needs a processor with AVX2 and AVX-512"),
          arguments: faces, FaceDescriptorNetwork.Precision.allCases)
    func sameBitsAcrossKernelSets(name: String, precision: FaceDescriptorNetwork.Precision) throws {
        let network = try Self.network(precision)
        let chip = try Self.chip(name)
        let avx2 = network.embedding(chip: chip, in: FaceDescriptorWorkspace(network: network, kernels: .avx2))
        let avx512 = network.embedding(chip: chip, in: FaceDescriptorWorkspace(network: network, kernels: .avx512))
        #expect(avx2.map(\.bitPattern) == avx512.map(\.bitPattern))
    }

    /// The integer convolutions' sums are exact and every other step is shared code, so int16
    /// gives the same bits on every set, the portable one included (fp32's portable set rounds its
    /// multiply-adds twice).
    @Test("int16 gives the same bits on every kernel set", arguments: faces)
    func int16SameBitsOnEverySet(name: String) throws {
        let network = try Self.network(.int16)
        let chip = try Self.chip(name)
        let runs = Self.kernelSets.map { network.embedding(chip: chip, in: FaceDescriptorWorkspace(network: network, kernels: $0)) }
        for run in runs.dropFirst() { #expect(run.map(\.bitPattern) == runs[0].map(\.bitPattern)) }
    }

    @Test("a workspace gives the same bits run after run, and different faces stay apart")
    func workspaceReuse() throws {
        let network = try Self.network()
        let workspace = FaceDescriptorWorkspace(network: network)
        let hopper = try Self.chip("hopper-0"), astronaut = try Self.chip("astronaut-1")
        let first = network.embedding(chip: hopper, in: workspace)
        let other = network.embedding(chip: astronaut, in: workspace)
        #expect(network.embedding(chip: hopper, in: workspace).map(\.bitPattern) == first.map(\.bitPattern))
        // Grace Hopper and Eileen Collins are different people by dlib's threshold.
        #expect(FaceDescriptorNetwork.distance(first, other) > FaceDescriptorNetwork.sameFaceDistance)
    }

    @Test("a chip must be 150x150 RGB")
    func chipSize() {
        #expect(throws: FaceAnalysisError.self) { try FaceChip(rgb: [UInt8](repeating: 0, count: 149 * 150 * 3)) }
    }
}
