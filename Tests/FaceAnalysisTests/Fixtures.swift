import FaceAnalysis
import FoundationEssentials
import PhotoDecoding
import Synchronization

/// Paths and loaders shared by the FaceAnalysis tests.
enum Fixtures {
    /// The directory holding this file's fixtures.
    static let directory: String = {
        let file = #filePath
        let folder = file[..<(file.lastIndex(of: "/") ?? file.endIndex)]
        return String(folder) + "/Fixtures"
    }()

    /// Where Debian's opencv-data installs the cascades.
    static let cascadeRoot = "/usr/share/opencv4"

    static func cascadePath(_ name: String) -> String {
        let folder = name.hasPrefix("lbp") ? "lbpcascades" : "haarcascades"
        return "\(cascadeRoot)/\(folder)/\(name).xml"
    }

    /// Cascades are parsed once per test process.
    private static let cache = CascadeCache()

    static func cascade(_ name: String) throws -> CascadeClassifier {
        try cache.cascade(name)
    }

    /// A gray fixture image, decoded by PhotoDrain's own decoder.
    static func image(_ name: String) throws -> Image {
        try PhotoDecoder.decode(directory + "/images/" + name, options: DecodeOptions(output: .gray))
    }

    /// The repository's Models/ folder.
    static let modelsDirectory: String = {
        let tests = directory[..<(directory.range(of: "/Tests/")?.lowerBound ?? directory.endIndex)]
        return String(tests) + "/Models"
    }()

    private static let blazeFace = Mutex<ConvolutionalNetwork?>(nil)

    /// The shipped BlazeFace network, loaded once per test process.
    static func blazeFaceNetwork() throws -> ConvolutionalNetwork {
        if let loaded = blazeFace.withLock({ $0 }) { return loaded }
        let network = try ConvolutionalNetwork(contentsOf: modelsDirectory + "/blazeface-full-range.pdnn")
        blazeFace.withLock { $0 = network }
        return network
    }

    /// The OpenCV results recorded by Scripts/make-face-fixtures.
    static let parity: ParityFixture? = {
        guard let bytes = try? readAll(directory + "/parity.json") else { return nil }
        return try? JSONDecoder().decode(ParityFixture.self, from: Data(bytes))
    }()

    static func readAll(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FaceAnalysisError(.unreadable, "cannot read \(path)")
        }
        return [UInt8](data)
    }
}

/// A cascade cache safe to use from parallel tests.
final class CascadeCache: Sendable {
    private let loaded = Mutex<[String: CascadeClassifier]>([:])

    func cascade(_ name: String) throws -> CascadeClassifier {
        if let hit = loaded.withLock({ $0[name] }) { return hit }
        let cascade = try CascadeClassifier(contentsOf: Fixtures.cascadePath(name))
        loaded.withLock { $0[name] = cascade }
        return cascade
    }
}

/// parity.json: OpenCV's boxes for every fixture image, cascade and parameter set.
struct ParityFixture: Decodable {
    struct Run: Decodable {
        var cascade: String
        var image: String
        var scaleFactor: Double
        var minNeighbors: Int
        var minSize: Int
        var maxSize: Int
        var boxes: [[Int]]
    }
    struct ResizeHash: Decodable {
        var width: Int
        var height: Int
        var fnv1a: String
    }
    var opencv: String
    /// The picture `resize` was computed from.
    var resizeSource: String
    /// FNV-1a hashes of OpenCV's INTER_LINEAR_EXACT output at several sizes.
    var resize: [ResizeHash]
    var faces: [String]
    var noFaces: [String]
    var results: [Run]
}
