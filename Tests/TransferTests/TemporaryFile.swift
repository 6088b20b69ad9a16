import Foundation

/// Temporary files for tests, each with a unique name under the system temporary directory.
enum TemporaryFile {
    /// Writes bytes to a new temporary file and returns its path.
    static func make(bytes: [UInt8], name: String = "photo.jpg") throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("photodrain-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    /// Removes a file made by `make` and its directory.
    static func remove(_ path: String) {
        let url = URL(fileURLWithPath: path)
        try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
    }

    /// Deterministic, non-repeating-looking bytes.
    static func pattern(count: Int, seed: UInt32 = 1) -> [UInt8] {
        var state = seed &* 2_654_435_761 | 1
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            return UInt8(truncatingIfNeeded: state)
        }
    }
}
