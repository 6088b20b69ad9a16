import Foundation
import Testing
@testable import PhotoDecoding

/// Corrupt, truncated, empty, mislabelled and hostile files: each is an error for that file only.
@Suite struct BadInputTests {
    static let goodJPEG: [UInt8] = (try? ImageEncoder.jpeg(Fixtures.rgbPicture(width: 320, height: 240), quality: 90)) ?? []
    static let goodPNG: [UInt8] = {
        guard let data = FileManager.default.contents(atPath: Fixtures.path("orientation-1.png")) else { return [] }
        return [UInt8](data)
    }()

    @Test(arguments: [3, 20, 150, 600, 2000, 5000])
    func truncatedJPEGIsAnError(length: Int) throws {
        let cut = Array(Self.goodJPEG.prefix(length))
        #expect(cut.count < Self.goodJPEG.count)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: cut) }
        #expect(error.code == .corrupt)
    }

    @Test(arguments: [8, 20, 40, 100, 140])
    func truncatedPNGIsAnError(length: Int) throws {
        let cut = Array(Self.goodPNG.prefix(length))
        #expect(cut.count < Self.goodPNG.count)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: cut) }
        #expect(error.code == .corrupt)
    }

    @Test func emptyInputIsAnError() throws {
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: []) }
        #expect(error.code == .empty)
    }

    @Test(arguments: [1, 2, 3])
    func randomBytesAreAnError(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        var bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let error1 = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
        #expect(error1.code == .unsupportedFormat)
        // Random bytes behind a valid signature reach the libraries, which must reject them cleanly.
        bytes.replaceSubrange(0..<3, with: [0xFF, 0xD8, 0xFF])
        #expect(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
        bytes.replaceSubrange(0..<8, with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
    }

    @Test func jpegHeaderClaiming60000SquareIsRefusedBeforeAllocating() throws {
        var bytes = Self.goodJPEG
        let sof = try #require(Self.markerOffset(0xC0, in: bytes))
        // SOF0: length(2) precision(1) height(2) width(2)
        bytes[sof + 5] = 0xEA; bytes[sof + 6] = 0x60  // 60000
        bytes[sof + 7] = 0xEA; bytes[sof + 8] = 0x60
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
        #expect(error.code == .tooLarge)
        #expect(error.message.contains("60000x60000"))
    }

    @Test func pngHeaderClaiming60000SquareIsRefusedBeforeAllocating() throws {
        var bytes = Self.goodPNG
        // IHDR data starts at 16: width(4) height(4); its CRC covers type + data (bytes 12..<29).
        for offset in [16, 20] { bytes.replaceSubrange(offset..<offset + 4, with: [0, 0, 0xEA, 0x60]) }
        let crc = crc32(bytes[12..<29])
        bytes.replaceSubrange(29..<33, with: [UInt8(crc >> 24), UInt8(crc >> 16 & 255), UInt8(crc >> 8 & 255), UInt8(crc & 255)])
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: bytes) }
        #expect(error.code == .tooLarge)
    }

    @Test func pixelCeilingIsConfigurable() throws {
        let options = DecodeOptions(maxPixels: 320 * 240 - 1)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(bytes: Self.goodJPEG, options: options) }
        #expect(error.code == .tooLarge)
        #expect(try PhotoDecoder.decode(bytes: Self.goodJPEG, options: DecodeOptions(maxPixels: 320 * 240)).width == 320)
    }

    @Test func mislabelledFilesDecodeAsWhatTheyAre() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pngNamedJPEG = dir.appendingPathComponent("really-a-png.jpg").path
        let jpegNamedPNG = dir.appendingPathComponent("really-a-jpeg.png").path
        #expect(FileManager.default.createFile(atPath: pngNamedJPEG, contents: Data(Self.goodPNG)))
        #expect(FileManager.default.createFile(atPath: jpegNamedPNG, contents: Data(Self.goodJPEG)))
        #expect(try PhotoDecoder.probe(pngNamedJPEG).format == .png)
        #expect(try PhotoDecoder.probe(jpegNamedPNG).format == .jpeg)
        #expect(try PhotoDecoder.decode(pngNamedJPEG).width == 96)
        #expect(try PhotoDecoder.decode(jpegNamedPNG).width == 320)
    }

    @Test func fileRemovedBetweenProbeAndDecode() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("gone.jpg").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(Self.goodJPEG)))
        #expect(try PhotoDecoder.probe(path).width == 320)
        try FileManager.default.removeItem(atPath: path)
        let error = try #require(throws: DecodeError.self) { try PhotoDecoder.decode(path) }
        #expect(error.code == .unreadable)
        #expect(error.path == path)
    }

    @Test func aBatchOfBadFilesDoesNotStopTheGoodOnes() throws {
        let dir = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var files: [(String, Bool)] = []
        func add(_ name: String, _ bytes: [UInt8], good: Bool) {
            let path = dir.appendingPathComponent(name).path
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            files.append((path, good))
        }
        add("a.jpg", Self.goodJPEG, good: true)
        add("b.jpg", Array(Self.goodJPEG.prefix(700)), good: false)
        add("c.png", Self.goodPNG, good: true)
        add("d.jpg", [], good: false)
        add("e.png", Array(Self.goodPNG.prefix(60)), good: false)
        add("f.jpg", Self.goodJPEG, good: true)
        add("g.txt", Array("hello".utf8), good: false)
        add("h.png", Self.goodPNG, good: true)
        var decoded = 0
        for (path, good) in files {
            do {
                _ = try PhotoDecoder.decode(path, options: DecodeOptions(targetShortSide: 100))
                #expect(good, "\(path) decoded but should have failed")
                decoded += 1
            } catch {
                #expect(!good, "\(path) failed: \(error)")
            }
        }
        #expect(decoded == 4)
    }

    static func markerOffset(_ marker: UInt8, in bytes: [UInt8]) -> Int? {
        var i = 2
        while i + 4 <= bytes.count, bytes[i] == 0xFF {
            if bytes[i + 1] == marker { return i }
            i += 2 + (Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]))
        }
        return nil
    }
}

/// CRC-32 as PNG chunks use it (ISO 3309, reflected 0xEDB88320).
func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// A small seeded generator so random-input tests repeat exactly.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
