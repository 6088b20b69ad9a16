import Foundation
import Testing
@testable import PhotoDecoding

/// WebP through libwebp: probe, full-range luma, libwebp's rescaler at JPEG's sizes, bad input.
/// Fixtures: Scripts/make-webp-fixtures.
@Suite struct WebPDecodingTests {
    static let goodWebP: [UInt8] = {
        guard let data = FileManager.default.contents(atPath: Fixtures.path("webp-chelsea.webp")) else { return [] }
        return [UInt8](data)
    }()

    @Test func probeReadsTheRIFFHeader() throws {
        let header = try PhotoDecoder.probe(Fixtures.path("webp-chelsea.webp"))
        #expect(header.format == .webp && header.width == 451 && header.height == 300 && header.orientation == .up)
    }

    @Test func grayIsTheLumaOfTheSourcePhoto() throws {
        let gray = try PhotoDecoder.decode(Fixtures.path("webp-chelsea.webp"))
        let reference = try PhotoDecoder.decode(Fixtures.sample("chelsea.jpg"))
        #expect(gray.width == 451 && gray.height == 300 && gray.channels == 1)
        let difference = HEIFDecodingTests.meanAbsoluteDifference(gray.pixels, reference.pixels)
        let mirrored = HEIFDecodingTests.meanAbsoluteDifference(gray.pixels, Orientation.upMirrored.apply(to: reference).pixels)
        #expect(difference < 5 && difference * 3 < mirrored, "\(difference) from the photo, \(mirrored) from its mirror image")
    }

    @Test func lumaIsFullRange() throws {
        // WebP codes Y in studio swing (16..235); the lossless pattern's quadrants (30, 90, 160,
        // 220) come back as they were only once it is stretched to full range.
        let image = try PhotoDecoder.decode(Fixtures.path("webp-pattern-lossless.webp"))
        OrientationTests.expectUpright(image)
        let probes = [(12, 8, 30), (84, 8, 90), (12, 56, 160), (84, 56, 220)]
        for (x, y, value) in probes {
            #expect(abs(Int(image[x, y]) - value) <= 1, "(\(x), \(y)) is \(image[x, y]), expected \(value)")
        }
        let rgb = try PhotoDecoder.decode(Fixtures.path("webp-pattern-lossless.webp"), options: DecodeOptions(output: .rgb))
        #expect(rgb.channels == 3 && rgb[12, 8, 0] == 30 && rgb[84, 56, 2] == 220)
    }

    @Test(arguments: [1, 2, 4, 8])
    func scaledSizeRoundsUpAsJPEGDoes(denominator: Int) throws {
        let target = scaledDimension(300, denominator: denominator)
        let path = Fixtures.path("webp-chelsea.webp")
        #expect(PhotoDecoder.scaleDenominator(for: try PhotoDecoder.probe(path), targetShortSide: target) == denominator)
        for output in [DecodeOptions.Output.gray, .rgb] {
            let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: output, targetShortSide: target))
            #expect(image.width == scaledDimension(451, denominator: denominator) && image.height == target)
            #expect(image.channels == output.channels)
        }
        // The rescaled picture is the same picture: its mean stays within a level of the full one.
        let full = try PhotoDecoder.decode(path)
        let scaled = try PhotoDecoder.decode(path, options: DecodeOptions(targetShortSide: target))
        let mean = { (image: Image) in Double(image.pixels.reduce(0) { $0 + Int($1) }) / Double(image.pixels.count) }
        #expect(abs(mean(full) - mean(scaled)) < 1.5)
    }

    @Test func animatedWebPIsUnsupported() throws {
        let path = Fixtures.path("webp-animated.webp")
        #expect(try PhotoDecoder.probe(path).format == .webp)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(path) }
        #expect(error.code == .unsupportedFormat && error.message.contains("animated"))
    }

    @Test(arguments: [12, 20, 30, 100, 1_000, 5_000, -1])
    func truncatedWebPIsAnError(length: Int) throws {
        let cut = Array(Self.goodWebP.prefix(length < 0 ? Self.goodWebP.count - 1 : length))
        #expect(cut.count < Self.goodWebP.count)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: cut) }
        #expect(error.code == .corrupt, "\(cut.count) bytes: \(error)")
    }

    @Test(arguments: [1, 2, 3])
    func randomBytesBehindAWebPSignatureAreAnError(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        var bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.replaceSubrange(0..<16, with: Array("RIFF".utf8) + [0xF8, 0x0F, 0, 0] + Array("WEBPVP8 ".utf8))
        #expect(ImageFormat.sniff(bytes) == .webp)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
        #expect(error.code == .corrupt)
    }

    @Test func pixelCeilingIsHonoured() throws {
        let path = Fixtures.path("webp-chelsea.webp")
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(path, options: DecodeOptions(maxPixels: 451 * 300 - 1)) }
        #expect(error.code == .tooLarge)
        #expect(try PhotoDecoder.decode(path, options: DecodeOptions(maxPixels: 451 * 300)).width == 451)
    }

    @Test func sniffAndExtension() {
        #expect(ImageFormat.sniff(Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8L".utf8)) == .webp)
        #expect(ImageFormat.sniff(Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ".utf8)) == nil)
        #expect(ImageFormat.fromExtension(of: "x/IMG.WEBP") == .webp)
    }
}
