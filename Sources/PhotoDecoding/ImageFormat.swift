/// The container formats PhotoDrain decodes. The format is read from the file's first bytes,
/// never from its name, so a mislabelled photo still decodes as what it is.
public enum ImageFormat: String, Sendable, Codable {
    case jpeg
    case png
    /// HEIF still images through libheif: HEIC (HEVC, as phones write them) and AVIF (AV1).
    case heif
    /// WebP through libwebp, lossy (VP8) or lossless (VP8L); still images only.
    case webp

    /// How many leading bytes `sniff` needs to tell every format apart.
    public static let signatureLength = 32

    /// The `ftyp` brands of HEIF files that hold a still image libheif can decode.
    static let heifBrands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1", "avif"]

    /// The format whose signature starts `bytes`, or nil. HEIF is recognised by its leading `ftyp`
    /// box: the major brand, or a compatible brand when the major one is unknown.
    public static func sniff(_ bytes: some Collection<UInt8>) -> ImageFormat? {
        let head = Array(bytes.prefix(signatureLength))
        if head.count >= 3, head[0] == 0xFF, head[1] == 0xD8, head[2] == 0xFF { return .jpeg }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if isHEIF(head) { return .heif }
        if head.count >= 12, head[0...3].elementsEqual("RIFF".utf8), head[8...11].elementsEqual("WEBP".utf8) { return .webp }
        return nil
    }

    /// True when `head` starts with an `ftyp` box naming a HEIF brand PhotoDrain decodes.
    private static func isHEIF(_ head: [UInt8]) -> Bool {
        guard head.count >= 12, head[4...7].elementsEqual("ftyp".utf8) else { return false }
        let boxSize = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
        func brand(at offset: Int) -> String { String(decoding: head[offset..<offset + 4], as: UTF8.self) }
        if heifBrands.contains(brand(at: 8)) { return true }
        // Compatible brands follow the major brand (4) and minor version (4), up to the box's end.
        var offset = 16
        while offset + 4 <= min(boxSize, head.count) {
            if heifBrands.contains(brand(at: offset)) { return true }
            offset += 4
        }
        return false
    }

    /// The format a file name's extension suggests, or nil.
    public static func fromExtension(of path: String) -> ImageFormat? {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        switch path[path.index(after: dot)...].lowercased() {
        case "jpg", "jpeg", "jpe", "jfif": return .jpeg
        case "png": return .png
        case "heic", "heif", "hif", "avif": return .heif
        case "webp": return .webp
        default: return nil
        }
    }
}
