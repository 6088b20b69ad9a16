@testable import FaceAnalysis
import PhotoDecoding
import Testing

/// The pyramid resize: bit-exact against OpenCV (hashes recorded by Scripts/make-face-fixtures)
/// and the properties any resize must have.
@Suite struct ResizeTests {
    static func pattern(width: Int, height: Int) -> Image {
        var image = Image(grayWidth: width, height: height)
        for y in 0..<height {
            for x in 0..<width { image[x, y] = UInt8(truncatingIfNeeded: x &* 7 &+ y &* 13 &+ (x &* y) >> 3) }
        }
        return image
    }

    /// FNV-1a, 64-bit, over the pixels: the script computes the same over OpenCV's output.
    static func fnv(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf29ce484222325
        for b in bytes { hash = (hash ^ UInt64(b)) &* 0x100000001b3 }
        return hash
    }

    @Test func matchesOpenCVBitForBit() throws {
        let fixture = try #require(Fixtures.parity)
        #expect(fixture.resize.count >= 6)
        let source = try Fixtures.image(fixture.resizeSource)
        for entry in fixture.resize {
            let out = Resize.bilinear(source, width: entry.width, height: entry.height)
            #expect(out.width == entry.width && out.height == entry.height)
            #expect(String(Self.fnv(out.pixels), radix: 16) == entry.fnv1a, "\(entry.width)x\(entry.height)")
        }
    }

    @Test(arguments: [(1, 1), (2, 2), (5, 3), (64, 48), (33, 17)])
    func constantStaysConstant(width: Int, height: Int) {
        let image = Image(grayWidth: 37, height: 23, value: 201)
        let out = Resize.bilinear(image, width: width, height: height)
        #expect(out.pixels.allSatisfy { $0 == 201 })
    }

    @Test func sameSizeIsACopy() {
        let image = Self.pattern(width: 31, height: 17)
        #expect(Resize.bilinear(image, width: 31, height: 17) == image)
    }

    @Test func exactHalvingAveragesBlocks() {
        let image = Self.pattern(width: 8, height: 6)
        let out = Resize.bilinear(image, width: 4, height: 3)
        for y in 0..<3 {
            for x in 0..<4 {
                let s = Int(image[2 * x, 2 * y]) + Int(image[2 * x + 1, 2 * y]) + Int(image[2 * x, 2 * y + 1]) + Int(image[2 * x + 1, 2 * y + 1])
                #expect(Int(out[x, y]) == (s + 2) >> 2)
            }
        }
    }

    @Test func emptyTargetOrSourceGivesEmptyImage() {
        #expect(Resize.bilinear(Image(grayWidth: 0, height: 0), width: 4, height: 4).pixels == [UInt8](repeating: 0, count: 16))
        #expect(Resize.bilinear(Self.pattern(width: 5, height: 5), width: 0, height: 3).pixels.isEmpty)
    }

    @Test func analysisSizeKeepsAspect() {
        let out = Resize.toAnalysisSize(Self.pattern(width: 400, height: 300), shortSide: 150)
        #expect(out.width == 200 && out.height == 150)
        let tall = Resize.toAnalysisSize(Self.pattern(width: 300, height: 400), shortSide: 150)
        #expect(tall.width == 150 && tall.height == 200)
        let small = Self.pattern(width: 100, height: 80)
        #expect(Resize.toAnalysisSize(small, shortSide: 150) == small)
    }
}
