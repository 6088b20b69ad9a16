import Foundation
import Testing
@testable import PhotoDecoding

@Suite struct JPEGDecodingTests {
    /// An odd-sized JPEG so every scale has to round.
    static let oddJPEG: [UInt8] = {
        (try? ImageEncoder.jpeg(Fixtures.rgbPicture(width: 1001, height: 757), quality: 92)) ?? []
    }()

    @Test(arguments: [1, 2, 4, 8])
    func scaledDimensionsMatchLibjpegRounding(denominator: Int) throws {
        // libjpeg sizes a scaled output as ceil(size / denominator).
        let target = scaledDimension(757, denominator: denominator)
        let image = try PhotoDecoder.decode(bytes: Self.oddJPEG, options: DecodeOptions(targetShortSide: target))
        #expect(image.width == (1001 + denominator - 1) / denominator)
        #expect(image.height == (757 + denominator - 1) / denominator)
        #expect(image.channels == 1)
    }

    @Test(arguments: [1, 2, 4, 8])
    func grayIsTheLumaOfTheRGBDecode(denominator: Int) throws {
        let target = scaledDimension(757, denominator: denominator)
        let gray = try PhotoDecoder.decode(bytes: Self.oddJPEG, options: DecodeOptions(output: .gray, targetShortSide: target))
        let rgb = try PhotoDecoder.decode(bytes: Self.oddJPEG, options: DecodeOptions(output: .rgb, targetShortSide: target))
        #expect(rgb.channels == 3 && rgb.width == gray.width && rgb.height == gray.height)
        let luma = rgb.grayscale()
        var worst = 0
        var total = 0
        var beyondRounding = 0
        for i in 0..<gray.pixels.count {
            let d = abs(Int(gray.pixels[i]) - Int(luma.pixels[i]))
            worst = max(worst, d)
            total += d
            if d > 2 { beyondRounding += 1 }
        }
        // YCbCr -> RGB rounds each channel (a level or two of luma) and clamps saturated colours
        // (a few more, on a few pixels); everywhere else luma and Y agree.
        #expect(Double(total) / Double(gray.pixels.count) < 0.75)
        #expect(Double(beyondRounding) / Double(gray.pixels.count) < 0.01)
        #expect(worst <= 8)
    }

    @Test func samplePhotoDecodesToExpectedScale() throws {
        let path = Fixtures.sample("three-portraits.jpg")
        let header = try PhotoDecoder.probe(path)
        #expect(header.format == .jpeg && header.width == 1872 && header.height == 680)
        #expect(PhotoDecoder.scaleDenominator(for: header, targetShortSide: 170) == 4)
        let image = try PhotoDecoder.decode(path, options: DecodeOptions(targetShortSide: 170))
        #expect(image.width == 468 && image.height == 170)
    }

    @Test func encoderRoundTripsGray() throws {
        let gray = Fixtures.rgbPicture(width: 64, height: 48).grayscale()
        let bytes = try ImageEncoder.jpeg(gray, quality: 100)
        let decoded = try PhotoDecoder.decode(bytes: bytes)
        #expect(decoded.width == 64 && decoded.height == 48)
        let maxDiff = zip(decoded.pixels, gray.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(maxDiff <= 8)
    }
}
