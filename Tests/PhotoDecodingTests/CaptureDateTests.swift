import Foundation
import PhotoDecoding
import Testing

/// The EXIF `DateTimeOriginal` that travels with each upload, from every container.
@Suite struct CaptureDateTests {
    /// Fixtures written by Scripts/make-capture-date-fixtures (TIFF block assembled in Python).
    @Test(arguments: ["capture-date.jpg", "capture-date.heic", "capture-date.webp", "capture-date.png"])
    func theDateIsReadFromEachContainer(name: String) {
        #expect(CaptureDate.dateTimeOriginal(path: Fixtures.path(name)) == "2021:03:04 05:06:07")
    }

    /// Photos without the tag (an EXIF block with orientation only, none at all), files that are
    /// not photos and paths that are not files give nil, never an error.
    @Test(arguments: ["heif-orientation-6-exif6.heic", "heif-chelsea.heic", "orientation-6.jpg", "png-rgba-8.png",
                      "missing.jpg", ""])
    func noDateIsNil(name: String) {
        #expect(CaptureDate.dateTimeOriginal(path: Fixtures.path(name)) == nil)
    }

    /// The reader walks bytes from the file: a big-endian block works, and truncated or
    /// out-of-range offsets give nil rather than a crash.
    @Test func bigEndianAndDamagedBlocks() {
        var block: [UInt8] = Array("MM".utf8) + [0, 42, 0, 0, 0, 8]
        block += [0, 1, 0x87, 0x69, 0, 4, 0, 0, 0, 1, 0, 0, 0, 26, 0, 0, 0, 0]
        block += [0, 1, 0x90, 0x03, 0, 2, 0, 0, 0, 20, 0, 0, 0, 44, 0, 0, 0, 0]
        block += Array("1999:12:31 23:59:59".utf8) + [0]
        #expect(block.withUnsafeBytes { exifDateTimeOriginal($0) } == "1999:12:31 23:59:59")
        for cut in [10, 30, 50, 62] {
            #expect(Array(block.prefix(cut)).withUnsafeBytes { exifDateTimeOriginal($0) } == nil)
        }
        var wild = block
        wild[18] = 0x7F   // the Exif IFD pointer far past the end
        #expect(wild.withUnsafeBytes { exifDateTimeOriginal($0) } == nil)
        var blank = block
        for i in 44..<63 { blank[i] = i == 48 || i == 51 ? 0x3A : (i == 54 || i == 57 ? 0x3A : 0x20) }
        #expect(blank.withUnsafeBytes { exifDateTimeOriginal($0) } == nil)
    }
}
