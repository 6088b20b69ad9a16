import Foundation
@testable import AssetStore

/// A fresh library folder and store for one test, removed when the test ends.
final class TemporaryLibrary {
    let root: URL
    let storePath: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("pd-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("library"), withIntermediateDirectories: true)
        storePath = root.appendingPathComponent("store.sqlite").path
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    var libraryPath: String { root.appendingPathComponent("library").path }

    func open(historyLimit: Int = 100_000) throws -> AssetStore {
        try AssetStore(root: libraryPath, path: storePath, historyLimit: historyLimit)
    }

    /// Writes a file under the library (parents created); its bytes are `contents`.
    @discardableResult
    func write(_ relative: String, _ contents: String = "photo") throws -> String {
        let url = root.appendingPathComponent("library").appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: url)
        return url.path
    }

    func remove(_ relative: String) throws {
        try FileManager.default.removeItem(at: root.appendingPathComponent("library").appendingPathComponent(relative))
    }

    static func verdict(_ label: String = "faces", faces: Int = 1) -> BankedVerdict {
        BankedVerdict(json: "{\"label\":\"\(label)\"}", label: label, faceCount: faces, score: 0.9, sha256: "ab")
    }
}
