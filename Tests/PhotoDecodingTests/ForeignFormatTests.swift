import Foundation
import Testing
@testable import PhotoDecoding

/// Files PhotoDrain does not decode are named in their error, so nothing is skipped without a why.
@Suite struct ForeignFormatTests {
    static func ascii(_ text: String, padTo count: Int = 32) -> [UInt8] {
        let bytes = Array(text.utf8)
        return bytes + [UInt8](repeating: 0x20, count: max(0, count - bytes.count))
    }

    static let cases: [(String, [UInt8], ForeignFormat?)] = [
        ("GIF", ascii("GIF89a"), .gif),
        ("TIFF little-endian (CR2, NEF, DNG)", [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0], .tiff),
        ("TIFF big-endian", [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8], .tiff),
        ("BMP", [0x42, 0x4D, 0x36, 0x10, 0x0E, 0x00, 0, 0, 0, 0, 0x36, 0, 0, 0], .bmp),
        ("JPEG XL codestream", [0xFF, 0x0A, 0xFA, 0x7F], .jpegXL),
        ("JPEG XL container", [0, 0, 0, 0x0C] + ascii("JXL \r\n"), .jpegXL),
        ("Canon CR3", [0, 0, 0, 0x18] + ascii("ftypcrx "), .canonCR3),
        ("Fujifilm RAF", ascii("FUJIFILMCCD-RAW 0201"), .fujiRAF),
        ("Olympus ORF", ascii("IIRO"), .olympusORF),
        ("Panasonic RW2", [0x49, 0x49, 0x55, 0x00, 0x18, 0, 0, 0], .panasonicRW2),
        ("QuickTime (iPhone live photo)", [0, 0, 0, 0x14] + ascii("ftypqt  "), .quickTime),
        ("QuickTime without ftyp", [0, 0, 0, 0x08] + ascii("wide"), .quickTime),
        ("MP4", [0, 0, 0, 0x18] + ascii("ftypisom"), .mp4),
        ("AVI", ascii("RIFF", padTo: 0) + [0, 0, 0, 0] + ascii("AVI LIST"), .avi),
        ("PDF", ascii("%PDF-1.7"), .pdf),
        ("Photoshop", ascii("8BPS"), .photoshop),
        ("ZIP", [0x50, 0x4B, 0x03, 0x04, 20, 0], .zip),
        ("text", ascii("hello, world"), nil),
        ("HEIC is decoded, not foreign", [0, 0, 0, 0x18] + ascii("ftypheic") + [0, 0, 0, 0] + ascii("mif1heic"), nil),
        ("JPEG is decoded, not foreign", [0xFF, 0xD8, 0xFF, 0xE0], nil),
    ]

    @Test(arguments: cases.map(\.0))
    func namesTheFormat(name: String) throws {
        let (_, bytes, expected) = try #require(Self.cases.first { $0.0 == name })
        #expect(ForeignFormat.sniff(bytes) == expected)
    }

    @Test func theErrorSaysWhatWasSkipped() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("IMG_0001.MOV").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data([0, 0, 0, 0x14] + Self.ascii("ftypqt  ", padTo: 64))))
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.probe(path) }
        #expect(error.code == .unsupportedFormat)
        #expect(error.message.hasPrefix("a QuickTime video"), "\(error)")
        let unknown = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: Self.ascii("hello, world")) }
        #expect(unknown.code == .unsupportedFormat && unknown.message == "not a JPEG, PNG, HEIF or WebP file")
        let gif = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: Self.ascii("GIF89a")) }
        #expect(gif.message.hasPrefix("a GIF image"))
    }
}
