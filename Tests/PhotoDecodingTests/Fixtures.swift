import Foundation
import PhotoDecoding

/// Paths to the committed fixtures and scratch files for the decoding tests.
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let sampleImages = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("SampleImages")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    static func sample(_ name: String) -> String { sampleImages.appendingPathComponent(name).path }

    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("photodrain-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A deterministic RGB test picture with smooth gradients and edges.
    static func rgbPicture(width: Int, height: Int) -> Image {
        Image(width: width, height: height, channels: 3) { buffer in
            for y in 0..<height {
                for x in 0..<width {
                    let i = (y * width + x) * 3
                    buffer[i] = UInt8((x * 255) / max(width - 1, 1))
                    buffer[i + 1] = UInt8((y * 255) / max(height - 1, 1))
                    buffer[i + 2] = ((x / 16 + y / 16) % 2 == 0) ? 40 : 210
                }
            }
        }
    }
}
