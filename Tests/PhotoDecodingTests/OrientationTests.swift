import Testing
@testable import PhotoDecoding

@Suite struct OrientationTests {
    /// The upright pattern's quadrants: top-left 30, top-right 90, bottom-left 160, bottom-right 220.
    static func expectUpright(_ image: Image) {
        #expect(image.width == 96 && image.height == 64)
        let probes = [(12, 8, 30), (84, 8, 90), (12, 56, 160), (84, 56, 220)]
        for (x, y, value) in probes {
            let got = Int(image[x, y])
            #expect(abs(got - value) <= 6, "pixel (\(x), \(y)) is \(got), expected about \(value)")
        }
    }

    @Test(arguments: 1...8)
    func jpegTurnsUpright(orientation: Int) throws {
        let path = Fixtures.path("orientation-\(orientation).jpg")
        let header = try PhotoDecoder.probe(path)
        #expect(header.orientation.rawValue == orientation)
        #expect(header.uprightSize.width == 96 && header.uprightSize.height == 64)
        Self.expectUpright(try PhotoDecoder.decode(path))
    }

    @Test(arguments: 1...8)
    func pngTurnsUpright(orientation: Int) throws {
        let path = Fixtures.path("orientation-\(orientation).png")
        #expect(try PhotoDecoder.probe(path).orientation.rawValue == orientation)
        Self.expectUpright(try PhotoDecoder.decode(path))
    }

    @Test func orientationCanBeLeftAsStored() throws {
        let image = try PhotoDecoder.decode(Fixtures.path("orientation-6.jpg"), options: DecodeOptions(applyOrientation: false))
        #expect(image.width == 64 && image.height == 96)
    }

    @Test func malformedExifIsIgnored() {
        let cases: [[UInt8]] = [
            [],
            Array("Exif\0\0".utf8),
            Array("Exif\0\0MM\0*".utf8),                     // IFD offset missing
            Array("Exif\0\0II*\0".utf8) + [0xFF, 0xFF, 0xFF, 0x7F],  // IFD offset far out of range
            Array("Exif\0\0MM\0*".utf8) + [0, 0, 0, 8, 0, 1, 1, 0x12, 0, 3, 0, 0, 0, 1, 0, 9, 0, 0],  // value 9
        ]
        for bytes in cases {
            let result = bytes.withUnsafeBytes { exifOrientation($0) }
            #expect(result == nil)
        }
    }
}
