import Foundation

/// A temporary file of pseudo-random bytes, removed by `remove()`.
struct TestFile {
    let path: String
    let bytes: [UInt8]

    /// Writes `size` bytes drawn from `seed` to a fresh file named `name` in its own directory.
    init(size: Int, seed: UInt64, name: String = "IMG_0001.jpg") throws {
        var state = seed &+ 0x9E37_79B9_7F4A_7C15
        var bytes = [UInt8](repeating: 0, count: size)
        for i in 0..<size {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes[i] = UInt8(truncatingIfNeeded: state >> 33)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("s3tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        self.bytes = bytes
    }

    /// A file already on disk with known contents.
    init(existing path: String, bytes: [UInt8]) {
        self.path = path
        self.bytes = bytes
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
    }
}
