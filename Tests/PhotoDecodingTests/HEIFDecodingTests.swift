import Foundation
import Testing
@testable import PhotoDecoding

/// HEIF (HEIC and AVIF) through libheif: probe, scaled gray and RGB, irot/imir orientation with
/// EXIF ignored, the embedded thumbnail, the pixel ceiling. Fixtures: Scripts/make-heif-fixtures.
@Suite struct HEIFDecodingTests {
    /// Each HEIF fixture made from a SampleImages photo, with that photo and its size.
    static let encodedSamples: [(heif: String, source: String, width: Int, height: Int)] = [
        ("heif-astronaut.heic", "astronaut.png", 512, 512),
        ("heif-camera.heic", "camera.png", 512, 512),
        ("heif-chelsea.heic", "chelsea.jpg", 451, 300),
        ("heif-chelsea.avif", "chelsea.jpg", 451, 300),
    ]

    @Test(arguments: encodedSamples.map(\.heif))
    func probeReadsTheFtypBrandAndTheSize(file: String) throws {
        let sample = try #require(Self.encodedSamples.first { $0.heif == file })
        let header = try PhotoDecoder.probe(Fixtures.path(file))
        #expect(header.format == .heif)
        #expect(header.width == sample.width && header.height == sample.height)
        #expect(header.orientation == .up)
        #expect(header.decodesFullFrame)
    }

    /// Gray comes from the codec's luma plane: it must match the luma of the source photo decoded
    /// from JPEG/PNG, up to the lossy coding (quality 40-50: a few levels on the textured
    /// astronaut) — and be far closer to it than to its mirror image, which a wrong plane, a turned
    /// picture or a range error would not be.
    @Test(arguments: encodedSamples.map(\.heif))
    func grayIsTheLumaOfTheSourcePhoto(file: String) throws {
        let sample = try #require(Self.encodedSamples.first { $0.heif == file })
        let gray = try PhotoDecoder.decode(Fixtures.path(file))
        let reference = try PhotoDecoder.decode(Fixtures.sample(sample.source))
        #expect(gray.channels == 1 && gray.width == reference.width && gray.height == reference.height)
        let meanDifference = Self.meanAbsoluteDifference(gray.pixels, reference.pixels)
        let mirrored = Self.meanAbsoluteDifference(gray.pixels, Orientation.upMirrored.apply(to: reference).pixels)
        #expect(meanDifference < 7, "\(file): mean difference \(meanDifference) from \(sample.source)")
        #expect(meanDifference * 3 < mirrored, "\(file): \(meanDifference) from the photo, \(mirrored) from its mirror image")
    }

    @Test(arguments: [1, 2, 4, 8])
    func scaledSizeRoundsUpAsJPEGDoes(denominator: Int) throws {
        // 451 x 300: an odd width, so every scale has to round.
        let target = scaledDimension(300, denominator: denominator)
        let path = Fixtures.path("heif-chelsea.heic")
        #expect(PhotoDecoder.scaleDenominator(for: try PhotoDecoder.probe(path), targetShortSide: target) == denominator)
        for output in [DecodeOptions.Output.gray, .rgb] {
            let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: output, targetShortSide: target))
            #expect(image.width == scaledDimension(451, denominator: denominator))
            #expect(image.height == target)
            #expect(image.channels == output.channels)
        }
    }

    @Test(arguments: [2, 4, 8])
    func scaledGrayIsTheBlockMeanOfTheFullDecode(denominator: Int) throws {
        let path = Fixtures.path("heif-chelsea.heic")
        let full = try PhotoDecoder.decode(path)
        let scaled = try PhotoDecoder.decode(path, options: DecodeOptions(targetShortSide: scaledDimension(300, denominator: denominator)))
        var worst = 0
        for y in 0..<scaled.height {
            for x in 0..<scaled.width {
                var sum = 0, count = 0
                for sy in y * denominator..<min((y + 1) * denominator, full.height) {
                    for sx in x * denominator..<min((x + 1) * denominator, full.width) {
                        sum += Int(full[sx, sy])
                        count += 1
                    }
                }
                worst = max(worst, abs(Int(scaled[x, y]) - (sum + count / 2) / count))
            }
        }
        #expect(worst == 0)
    }

    @Test func rgbLumaMatchesTheGrayDecode() throws {
        let path = Fixtures.path("heif-astronaut.heic")
        let rgb = try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb, targetShortSide: 256))
        let gray = try PhotoDecoder.decode(path, options: DecodeOptions(output: .gray, targetShortSide: 256))
        #expect(rgb.channels == 3 && rgb.width == 256 && rgb.height == 256)
        // Colour conversion rounds and clamps each channel; the luma of the result stays within a level or two of Y.
        #expect(Self.meanAbsoluteDifference(rgb.grayscale().pixels, gray.pixels) < 2)
        // And it is a colour picture, not gray copied into three channels.
        let chroma = (0..<rgb.width * rgb.height).reduce(0) { $0 + abs(Int(rgb.pixels[$1 * 3]) - Int(rgb.pixels[$1 * 3 + 2])) }
        #expect(chroma / (rgb.width * rgb.height) > 10)
    }

    @Test(arguments: 1...8)
    func irotAndImirTurnItUpright(orientation: Int) throws {
        let path = Fixtures.path("heif-orientation-\(orientation).heic")
        let header = try PhotoDecoder.probe(path)
        #expect(header.width == 96 && header.height == 64 && header.orientation == .up)
        OrientationTests.expectUpright(try PhotoDecoder.decode(path))
        let rgb = try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb))
        OrientationTests.expectUpright(rgb.grayscale())
    }

    @Test func exifOrientationBesideIrotIsNotAppliedTwice() throws {
        // Phones write irot and the same EXIF orientation; HEIF says irot wins and EXIF is ignored.
        let path = Fixtures.path("heif-orientation-6-exif6.heic")
        #expect(try PhotoDecoder.probe(path).orientation == .up)
        OrientationTests.expectUpright(try PhotoDecoder.decode(path))
    }

    @Test func exifOrientationWithoutIrotIsIgnored() throws {
        // The JPEG's EXIF 6 travelled into the HEIF, but no irot: the picture shows as stored.
        let path = Fixtures.path("heif-hopper-exif6.heic")
        let header = try PhotoDecoder.probe(path)
        #expect(header.width == 600 && header.height == 512 && header.orientation == .up)
        let image = try PhotoDecoder.decode(path)
        #expect(image.width == 600 && image.height == 512)
        let stored = try PhotoDecoder.decode(Fixtures.sample("hopper-orientation-6.jpg"), options: DecodeOptions(applyOrientation: false))
        #expect(Self.meanAbsoluteDifference(image.pixels, stored.pixels) < 4)
    }

    @Test func tenBitImageDecodesTo8Bit() throws {
        // HDR phone photos code 10-bit samples; gray and RGB come back as 8-bit at full range.
        let path = Fixtures.path("heif-10bit.heic")
        OrientationTests.expectUpright(try PhotoDecoder.decode(path))
        OrientationTests.expectUpright(try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb)).grayscale())
        let half = try PhotoDecoder.decode(path, options: DecodeOptions(targetShortSide: 32))
        #expect(half.width == 48 && half.height == 32)
        #expect(abs(Int(half[6, 4]) - 30) <= 6 && abs(Int(half[42, 28]) - 220) <= 6)
    }

    @Test func alphaIsDropped() throws {
        let path = Fixtures.path("heif-alpha.heic")
        let reference = try PhotoDecoder.decode(Fixtures.path("png-rgba-8.png"))
        let gray = try PhotoDecoder.decode(path)
        let rgb = try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb))
        #expect(gray.width == 13 && gray.height == 7 && rgb.channels == 3 && rgb.width == 13)
        #expect(Self.meanAbsoluteDifference(gray.pixels, reference.pixels) < 3)
        #expect(Self.meanAbsoluteDifference(rgb.grayscale().pixels, reference.pixels) < 3)
    }

    @Test func orientationCanBeLeftAsStored() throws {
        let image = try PhotoDecoder.decode(Fixtures.path("heif-orientation-6.heic"), options: DecodeOptions(applyOrientation: false))
        #expect(image.width == 64 && image.height == 96)
    }

    @Test(arguments: [
        // (target, expected width = height): the 160-pixel thumbnail serves targets up to 160,
        // reduced further when it can be; above that the primary image is decoded and reduced.
        (60, 80), (80, 80), (100, 160), (160, 160), (161, 256), (300, 512),
    ])
    func thumbnailServesSmallTargets(target: Int, expected: Int) throws {
        let image = try PhotoDecoder.decode(Fixtures.path("heif-astronaut.heic"), options: DecodeOptions(targetShortSide: target))
        #expect(image.width == expected && image.height == expected)
        // Whichever image it came from, it is the same picture: compare with the PNG, reduced alike.
        // The thumbnail was made by heif-enc with libheif's nearest-neighbour scaler and coded at
        // quality 50, so it is further from a block mean than the primary image; it must still be
        // the same upright picture, far closer to it than to its mirror image.
        let reference = try PhotoDecoder.decode(Fixtures.sample("astronaut.png"))
        let reduced = Image(width: expected, height: expected, channels: 1) { buffer in
            for y in 0..<expected {
                for x in 0..<expected {
                    // The mean of the source pixels this output pixel covers.
                    var sum = 0, count = 0
                    for sy in y * 512 / expected..<(y + 1) * 512 / expected {
                        for sx in x * 512 / expected..<(x + 1) * 512 / expected {
                            sum += Int(reference[sx, sy])
                            count += 1
                        }
                    }
                    buffer[y * expected + x] = UInt8(sum / count)
                }
            }
        }
        let difference = Self.meanAbsoluteDifference(image.pixels, reduced.pixels)
        let mirrored = Self.meanAbsoluteDifference(image.pixels, Orientation.upMirrored.apply(to: reduced).pixels)
        #expect(difference < 12 && difference * 3 < mirrored, "\(difference) from the photo, \(mirrored) from its mirror image")
    }

    @Test(arguments: [
        // (width, height, thumbnail, target, use thumbnail, denominator)
        (4032, 3024, (320, 240), 240, true, 1),
        (4032, 3024, (320, 240), 120, true, 2),
        (4032, 3024, (320, 240), 241, false, 8),
        (4032, 3024, (320, 320), 240, false, 8),   // another shape (padded): never used
        (4032, 3024, nil, 480, false, 4),
    ] as [(Int, Int, (Int, Int)?, Int, Bool, Int)])
    func planChoosesThumbnailOrPrimary(width: Int, height: Int, thumbnail: (Int, Int)?, target: Int,
                                       useThumbnail: Bool, denominator: Int) {
        let plan = heifPlan(width: width, height: height, thumbnail: thumbnail.map { (width: $0.0, height: $0.1) },
                            targetShortSide: target)
        #expect(plan.useThumbnail == useThumbnail && plan.denominator == denominator)
    }

    @Test func probeReportsTheThumbnailAndThePlan() throws {
        let header = try PhotoDecoder.probe(Fixtures.path("heif-astronaut.heic"))
        #expect(header.thumbnail == PixelSize(width: 160, height: 160))
        let plan = try #require(PhotoDecoder.thumbnailPlan(for: header, targetShortSide: 70))
        #expect(plan.thumbnail == PixelSize(width: 160, height: 160) && plan.denominator == 2)
        #expect(PhotoDecoder.thumbnailPlan(for: header, targetShortSide: 161) == nil)
        #expect(try PhotoDecoder.probe(Fixtures.path("heif-chelsea.heic")).thumbnail == nil)
    }

    @Test func noTargetDecodesThePrimaryAtFullSize() {
        let plan = heifPlan(width: 4032, height: 3024, thumbnail: (width: 320, height: 240), targetShortSide: nil)
        #expect(!plan.useThumbnail && plan.denominator == 1)
    }

    static func meanAbsoluteDifference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        guard a.count == b.count, !a.isEmpty else { return .infinity }
        return Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
    }
}
