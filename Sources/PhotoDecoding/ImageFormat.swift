/// The container formats PhotoDrain decodes. The format is read from the file's first bytes,
/// never from its name, so a mislabelled photo still decodes as what it is.
public enum ImageFormat: String, Sendable, Codable {
    case jpeg
    case png

    /// The format whose signature starts `bytes`, or nil.
    public static func sniff(_ bytes: some Collection<UInt8>) -> ImageFormat? {
        let head = Array(bytes.prefix(8))
        if head.count >= 3, head[0] == 0xFF, head[1] == 0xD8, head[2] == 0xFF { return .jpeg }
        if head == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] { return .png }
        return nil
    }

    /// The format a file name's extension suggests, or nil.
    public static func fromExtension(of path: String) -> ImageFormat? {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        switch path[path.index(after: dot)...].lowercased() {
        case "jpg", "jpeg", "jpe", "jfif": return .jpeg
        case "png": return .png
        default: return nil
        }
    }
}
