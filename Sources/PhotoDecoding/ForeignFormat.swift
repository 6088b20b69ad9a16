/// What a file PhotoDrain does not decode is, read from its first bytes, so an unanalysable
/// photo's error says what was skipped ("a QuickTime video", "a Canon CR3 raw photo") rather than
/// only that it was. Recognising a format here never means decoding it. The raw values are stable
/// names for machines.
public enum ForeignFormat: String, Sendable, Codable, CaseIterable {
    /// GIF, still or animated.
    case gif
    /// TIFF, and the camera raw formats built on it (CR2, NEF, ARW, DNG, PEF, ...).
    case tiff
    /// Windows bitmap.
    case bmp
    /// JPEG XL, bare codestream or ISO BMFF container.
    case jpegXL = "jpeg-xl"
    /// Canon's ISO BMFF raw format (`ftyp crx `).
    case canonCR3 = "canon-cr3"
    /// Fujifilm raw.
    case fujiRAF = "fuji-raf"
    /// Olympus raw (a TIFF variant with its own magic).
    case olympusORF = "olympus-orf"
    /// Panasonic raw (a TIFF variant with its own magic).
    case panasonicRW2 = "panasonic-rw2"
    /// QuickTime movie, as phones write beside live photos.
    case quickTime = "quicktime"
    /// MP4 and other ISO BMFF files that are not HEIF.
    case mp4
    /// AVI video.
    case avi
    /// PDF document.
    case pdf
    /// Photoshop document.
    case photoshop
    /// ZIP archive.
    case zip

    /// A phrase naming the format, to start a sentence ("a GIF image").
    public var summary: String {
        switch self {
        case .gif: "a GIF image"
        case .tiff: "a TIFF file (TIFF or a TIFF-based camera raw: CR2, NEF, ARW, DNG)"
        case .bmp: "a BMP image"
        case .jpegXL: "a JPEG XL image"
        case .canonCR3: "a Canon CR3 raw photo"
        case .fujiRAF: "a Fujifilm RAF raw photo"
        case .olympusORF: "an Olympus ORF raw photo"
        case .panasonicRW2: "a Panasonic RW2 raw photo"
        case .quickTime: "a QuickTime video"
        case .mp4: "an MP4 video"
        case .avi: "an AVI video"
        case .pdf: "a PDF document"
        case .photoshop: "a Photoshop document"
        case .zip: "a ZIP archive"
        }
    }

    /// The foreign format whose signature starts `bytes`; nil when it is none PhotoDrain knows,
    /// and for every format PhotoDrain decodes (an `ftyp` box is HEIF or else a video).
    public static func sniff(_ bytes: some Collection<UInt8>) -> ForeignFormat? {
        let head = Array(bytes.prefix(ImageFormat.signatureLength))
        guard ImageFormat.sniff(head) == nil else { return nil }
        func starts(_ ascii: String) -> Bool { head.starts(with: Array(ascii.utf8)) }
        func at(_ offset: Int, _ ascii: String) -> Bool {
            let want = Array(ascii.utf8)
            return head.count >= offset + want.count && head[offset..<offset + want.count].elementsEqual(want)
        }
        if starts("GIF87a") || starts("GIF89a") { return .gif }
        if starts("IIRO") || starts("IIRS") || starts("MMOR") { return .olympusORF }
        if head.starts(with: [0x49, 0x49, 0x55, 0x00]) { return .panasonicRW2 }
        if head.starts(with: [0x49, 0x49, 0x2A, 0x00]) || head.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if starts("FUJIFILMCCD-RAW") { return .fujiRAF }
        if head.starts(with: [0xFF, 0x0A]) || head.starts(with: [0, 0, 0, 0x0C] + Array("JXL ".utf8)) { return .jpegXL }
        if starts("%PDF-") { return .pdf }
        if starts("8BPS") { return .photoshop }
        if head.starts(with: [0x50, 0x4B, 0x03, 0x04]) { return .zip }
        if starts("RIFF") && at(8, "AVI ") { return .avi }
        if starts("BM") && head.count >= 14 && head[6...9].allSatisfy({ $0 == 0 }) { return .bmp }
        if at(4, "ftyp") {
            if at(8, "crx ") { return .canonCR3 }
            if at(8, "qt  ") { return .quickTime }
            return .mp4
        }
        // QuickTime files from older cameras start with another atom before (or without) ftyp.
        if at(4, "moov") || at(4, "mdat") || at(4, "wide") || at(4, "free") { return .quickTime }
        return nil
    }
}
