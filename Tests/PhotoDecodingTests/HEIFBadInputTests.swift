import Foundation
import Testing
@testable import PhotoDecoding

/// Truncated, corrupt, empty, hostile and mislabelled HEIF files: each is a thrown `DecodeError`
/// for that file, never a crash and never a picture patched with invented pixels.
@Suite struct HEIFBadInputTests {
    static let goodHEIC: [UInt8] = {
        guard let data = FileManager.default.contents(atPath: Fixtures.path("heif-chelsea.heic")) else { return [] }
        return [UInt8](data)
    }()

    @Test func fixtureIsWhole() throws {
        #expect(Self.goodHEIC.count > 10_000)
        #expect(try PhotoDecoder.decode(bytes: Self.goodHEIC).width == 451)
    }

    @Test(arguments: [12, 24, 40, 100, 300, 1_000, 4_000, 12_000, -1])
    func truncatedHEICIsAnError(length: Int) throws {
        // -1: all but the last byte of the coded picture.
        let cut = Array(Self.goodHEIC.prefix(length < 0 ? Self.goodHEIC.count - 1 : length))
        #expect(cut.count < Self.goodHEIC.count)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: cut) }
        #expect(error.code == .corrupt, "\(cut.count) bytes: \(error)")
        #expect(!error.message.isEmpty)
    }

    @Test(arguments: [1, 2, 3])
    func randomBytesBehindAHEIFSignatureAreAnError(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        var bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        // A well-formed ftyp box (major heic, compatible mif1 and heic), then random boxes.
        bytes.replaceSubrange(0..<24, with: [0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8))
        #expect(ImageFormat.sniff(bytes) == .heif)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
        #expect(error.code == .corrupt, "\(error)")
    }

    @Test func ftypWithoutACompatibleBrandLibheifReadsIsUnsupported() throws {
        // Major brand heic, but libheif reads only files that list a brand it supports as compatible.
        var bytes = Self.goodHEIC
        bytes.replaceSubrange(16..<24, with: Array("isomiso2".utf8))
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
        #expect(error.code == .unsupportedFormat && error.message.contains("brands"), "\(error)")
    }

    /// Bytes flipped inside the coded picture: libheif and libde265 may notice (an error) or
    /// decode a damaged picture; either way the result has the right size and the process lives.
    @Test(arguments: [0.5, 0.75, 0.95])
    func flippedBytesInThePictureAreAnErrorOrAPicture(position: Double) throws {
        var bytes = Self.goodHEIC
        let start = Int(Double(bytes.count) * position)
        for i in start..<min(start + 64, bytes.count) { bytes[i] ^= 0x5A }
        do {
            let image = try PhotoDecoder.decode(bytes: bytes)
            #expect(image.width == 451 && image.height == 300)
        } catch {
            #expect(error.code == .corrupt)
        }
    }

    @Test func emptyHEICFileIsAnError() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("empty.heic").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let probeError = try #require(throws: DecodeError.self) { try PhotoDecoder.probe(path) }
        #expect(probeError.code == .empty)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(path) }
        #expect(error.code == .empty)
    }

    @Test func truncatedHEICFileNamesThePath() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("cut.heic").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(Self.goodHEIC.prefix(Self.goodHEIC.count / 2))))
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(path) }
        #expect(error.code == .corrupt && error.path == path)
    }

    @Test func pixelCeilingIsHonoured() throws {
        let path = Fixtures.path("heif-chelsea.heic")
        for options in [DecodeOptions(maxPixels: 451 * 300 - 1), DecodeOptions(output: .rgb, targetShortSide: 75, maxPixels: 451 * 300 - 1)] {
            let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(path, options: options) }
            #expect(error.code == .tooLarge)
        }
        let probeError = try #require(throws: DecodeError.self) { try PhotoDecoder.probe(path, maxPixels: 1000) }
        #expect(probeError.code == .tooLarge)
        #expect(try PhotoDecoder.decode(path, options: DecodeOptions(maxPixels: 451 * 300)).width == 451)
    }

    @Test func ispeClaiming60000SquareIsRefusedBeforeAllocating() throws {
        var bytes = Self.goodHEIC
        // 'ispe': version/flags (4), then width (4) and height (4), big-endian.
        let ispe = try #require(Self.offset(of: Array("ispe".utf8), in: bytes))
        for field in [ispe + 8, ispe + 12] { bytes.replaceSubrange(field..<field + 4, with: [0, 0, 0xEA, 0x60]) }
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
        #expect(error.code == .tooLarge)
    }

    @Test func mislabelledHEICDecodesAsWhatItIs() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("really-a-heic.jpg").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(Self.goodHEIC)))
        #expect(try PhotoDecoder.probe(path).format == .heif)
        #expect(try PhotoDecoder.decode(path).width == 451)
    }

    @Test(arguments: [
        ("ftypheic", true), ("ftypheix", true), ("ftypmif1", true), ("ftypmsf1", true), ("ftypavif", true),
        ("ftypisom", false), ("ftypqt  ", false), ("ftypcrx ", false), ("FTYPheic", false),
    ])
    func sniffReadsTheMajorBrand(box: String, isHEIF: Bool) {
        let bytes: [UInt8] = [0, 0, 0, 16] + Array(box.utf8) + [0, 0, 0, 0]
        #expect((ImageFormat.sniff(bytes) == .heif) == isHEIF)
    }

    @Test func sniffReadsCompatibleBrandsWithinTheFtypBox() {
        let mp4WithHEIF: [UInt8] = [0, 0, 0, 24] + Array("ftypisom".utf8) + [0, 0, 0, 0] + Array("isommif1".utf8)
        #expect(ImageFormat.sniff(mp4WithHEIF) == .heif)
        // The same brand after the box's end belongs to the next box, not to ftyp.
        let shortBox: [UInt8] = [0, 0, 0, 20] + Array("ftypisom".utf8) + [0, 0, 0, 0] + Array("isommif1".utf8)
        #expect(ImageFormat.sniff(shortBox) == nil)
    }

    @Test(arguments: [("a.heic", true), ("B.HEIF", true), ("c.avif", true), ("d.hif", true), ("e.mp4", false)])
    func extensionsNameHEIF(name: String, isHEIF: Bool) {
        #expect((ImageFormat.fromExtension(of: name) == .heif) == isHEIF)
    }

    static func offset(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
