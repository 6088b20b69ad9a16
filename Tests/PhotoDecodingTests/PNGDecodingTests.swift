import Foundation
import Testing
@testable import PhotoDecoding

@Suite struct PNGDecodingTests {
    struct Expected: Decodable {
        let width: Int
        let height: Int
        let gray: [Int]
    }

    static let expected: [String: Expected] = {
        guard let data = FileManager.default.contents(atPath: Fixtures.path("png-expected.json")),
              let table = try? JSONDecoder().decode([String: Expected].self, from: data) else { return [:] }
        return table
    }()

    @Test func fixtureTableIsComplete() {
        // 5 gray depths + 3 types x 2 depths + 4 palette depths, each plain and interlaced, + chroma.
        #expect(Self.expected.count == (5 + 6 + 4) * 2 + 1)
    }

    @Test(arguments: expected.keys.sorted())
    func decodesToExpectedGray(file: String) throws {
        let want = try #require(Self.expected[file])
        let image = try PhotoDecoder.decode(Fixtures.path(file))
        #expect(image.width == want.width && image.height == want.height && image.channels == 1)
        let diffs = zip(image.pixels, want.gray).map { abs(Int($0) - $1) }
        #expect(diffs.max() ?? 0 <= 1, "\(file): gray differs by up to \(diffs.max() ?? 0)")
    }

    @Test(arguments: ["png-gray-1.png", "png-palette-4-interlaced.png", "png-rgba-16.png"])
    func decodesToRGB(file: String) throws {
        let rgb = try PhotoDecoder.decode(Fixtures.path(file), options: DecodeOptions(output: .rgb))
        let gray = try PhotoDecoder.decode(Fixtures.path(file))
        #expect(rgb.channels == 3)
        // These fixtures have r == g == b, so every RGB channel equals the gray value.
        for i in 0..<gray.pixels.count {
            #expect(rgb.pixels[i * 3] == gray.pixels[i] && rgb.pixels[i * 3 + 2] == gray.pixels[i])
        }
    }

    @Test func writesAndReadsBack() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let picture = Fixtures.rgbPicture(width: 33, height: 17)
        let path = dir.appendingPathComponent("out.png").path
        try ImageEncoder.writePNG(picture, to: path)
        #expect(try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb)) == picture)
    }
}
