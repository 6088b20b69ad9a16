import SystemSupport

/// When a photo was taken, as its EXIF `DateTimeOriginal` (tag 0x9003 in the Exif sub-IFD) says:
/// the text as the camera wrote it, `YYYY:MM:DD HH:MM:SS`, in the camera's local time.
///
/// Read from JPEG (the APP1 `Exif` marker), PNG (`eXIf`), WebP (the RIFF `EXIF` chunk) and HEIF
/// (the `Exif` item, through libheif). Only the containers are walked, never the image data, and
/// every read is bounds-checked: the bytes come from the file.
public enum CaptureDate {
    /// The photo's `DateTimeOriginal`, or nil when it has none, the file is not one of the formats
    /// above, or its metadata is malformed. Never throws: a missing date is not an error.
    public static func dateTimeOriginal(path: String) -> String? {
        guard let exif = exifBlock(path: path) else { return nil }
        return exif.withUnsafeBytes { exifDateTimeOriginal($0) }
    }

    /// The photo's `DateTimeOriginal`, read from its bytes in memory, as `dateTimeOriginal(path:)`.
    public static func dateTimeOriginal(_ photo: PhotoBytes) -> String? {
        let container = Container(size: Int64(photo.count)) { offset, count in photo.slice(at: offset, count: count) }
        guard let exif = exifBlock(container, heif: { try? HEIFDecoder(photo: photo) }) else { return nil }
        return exif.withUnsafeBytes { exifDateTimeOriginal($0) }
    }

    /// The EXIF TIFF structure of the file at `path` (JPEG's keeps its `Exif\0\0` prefix), or nil.
    static func exifBlock(path: String) -> [UInt8]? {
        guard let opened = try? ReadOnlyFile(path: path), let size = try? opened.size() else { return nil }
        let container = Container(size: size) { offset, count in (try? opened.bytes(at: offset, count: count)) ?? [] }
        return exifBlock(container, heif: { try? HEIFDecoder(path: path) })
    }

    /// The EXIF block of the photo `file` holds; `heif` opens it for libheif when it is HEIF.
    private static func exifBlock(_ file: Container, heif: () -> HEIFDecoder?) -> [UInt8]? {
        let signature = file.read(at: 0, count: 12)
        if signature.starts(with: [0xFF, 0xD8]) { return jpegExif(file) }
        if signature.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return pngExif(file) }
        if signature.count == 12, signature.starts(with: Array("RIFF".utf8)), Array(signature[8..<12]) == Array("WEBP".utf8) {
            return webpExif(file)
        }
        if signature.count == 12, Array(signature[4..<8]) == Array("ftyp".utf8) {
            return heif()?.exif()
        }
        return nil
    }

    /// JPEG: the markers before the scan; the first APP1 that starts with `Exif\0\0`.
    private static func jpegExif(_ file: Container) -> [UInt8]? {
        var offset: Int64 = 2
        while offset < file.size {
            let marker = file.read(at: offset, count: 4)
            guard marker.count == 4, marker[0] == 0xFF else { return nil }
            if marker[1] == 0xFF { offset += 1; continue }   // fill byte
            if marker[1] == 0xDA || marker[1] == 0xD9 { return nil }   // start of scan, end of image
            let length = Int64(marker[2]) << 8 | Int64(marker[3])
            guard length >= 2 else { return nil }
            if marker[1] == 0xE1 {
                let body = file.read(at: offset + 4, count: Int(length - 2))
                if body.starts(with: [0x45, 0x78, 0x69, 0x66, 0, 0]) { return body }
            }
            offset += 2 + length
        }
        return nil
    }

    /// PNG: the `eXIf` chunk, before the first `IDAT` (as the PNG 1.5 extension requires) or after.
    private static func pngExif(_ file: Container) -> [UInt8]? {
        var offset: Int64 = 8
        while offset + 8 <= file.size {
            let head = file.read(at: offset, count: 8)
            guard head.count == 8 else { return nil }
            let length = Int64(head[0]) << 24 | Int64(head[1]) << 16 | Int64(head[2]) << 8 | Int64(head[3])
            let type = String(decoding: head[4..<8], as: UTF8.self)
            if type == "eXIf" { return length <= 1 << 20 ? file.read(at: offset + 8, count: Int(length)) : nil }
            if type == "IEND" { return nil }
            offset += 12 + length
        }
        return nil
    }

    /// WebP: the RIFF chunks after `WEBP`; the `EXIF` one (with or without an `Exif\0\0` prefix).
    private static func webpExif(_ file: Container) -> [UInt8]? {
        var offset: Int64 = 12
        while offset + 8 <= file.size {
            let head = file.read(at: offset, count: 8)
            guard head.count == 8 else { return nil }
            let length = Int64(head[4]) | Int64(head[5]) << 8 | Int64(head[6]) << 16 | Int64(head[7]) << 24
            if String(decoding: head[0..<4], as: UTF8.self) == "EXIF" {
                return length <= 1 << 20 ? file.read(at: offset + 8, count: Int(length)) : nil
            }
            offset += 8 + length + (length & 1)
        }
        return nil
    }
}

/// A photo's container being walked: reads are bounded by the size taken when it was opened, and
/// a read error ends the walk as the end of the file would (a missing date is not an error).
private struct Container {
    let size: Int64
    /// Up to `count` bytes at `offset` of the file or the bytes in memory; none on an error.
    let bytes: (Int64, Int) -> [UInt8]

    /// Up to `count` bytes at `offset`: fewer at the end of the file, none on an error.
    func read(at offset: Int64, count: Int) -> [UInt8] {
        guard count > 0, offset >= 0, offset < size else { return [] }
        return bytes(offset, Int(min(Int64(count), size - offset)))
    }
}

/// Reads tag 0x9003 (`DateTimeOriginal`, ASCII) from the Exif sub-IFD that IFD0's tag 0x8769
/// points to, in EXIF data laid out as `exifOrientation` reads it. nil when absent or malformed.
public func exifDateTimeOriginal(_ bytes: UnsafeRawBufferPointer) -> String? {
    guard let tiff = ExifTIFF(bytes), let ifd0 = tiff.firstIFD,
          let pointer = tiff.entry(0x8769, inIFDAt: ifd0), pointer.type == 4 || pointer.type == 13,
          let exifIFD = tiff.u32(pointer.field),
          let date = tiff.entry(0x9003, inIFDAt: exifIFD), date.type == 2, date.count > 0, date.count <= 64 else { return nil }
    let start: Int
    if date.count <= 4 {
        start = date.field
    } else {
        guard let offset = tiff.u32(date.field) else { return nil }
        start = tiff.base + offset
    }
    guard start >= 0, start + date.count <= bytes.count else { return nil }
    let text = bytes[start..<(start + date.count)].prefix { $0 != 0 }
    // EXIF ASCII is 7-bit; anything else (or an all-blank "unknown" date) is not a date.
    guard !text.isEmpty, text.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
    let value = String(decoding: text, as: UTF8.self).trimmingCharacters(in: " ")
    return value.isEmpty || value.allSatisfy({ $0 == ":" || $0 == " " }) ? nil : value
}

private extension String {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return String(s)
    }
}
