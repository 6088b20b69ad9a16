/// The EXIF orientation of a photo: how the stored pixels must be turned to stand upright.
public enum Orientation: Int, Sendable, Codable, CaseIterable {
    case up = 1, upMirrored, down, downMirrored, leftMirrored, right, rightMirrored, left

    /// True when the upright image swaps width and height (orientations 5 to 8).
    public var swapsAxes: Bool { rawValue >= 5 }

    /// The upright size of a stored image of `width` x `height`.
    public func uprightSize(width: Int, height: Int) -> (width: Int, height: Int) {
        swapsAxes ? (height, width) : (width, height)
    }

    /// Turns stored pixels upright.
    public func apply(to image: Image) -> Image {
        if self == .up { return image }
        let w = image.width, h = image.height, c = image.channels
        let (ow, oh) = uprightSize(width: w, height: h)
        // The source pixel of output (x, y) is (sx, sy) = (x0 + x*ax + y*bx, y0 + x*ay + y*by):
        // as a byte offset, start + x*stepX + y*stepY.
        let (x0, ax, bx, y0, ay, by): (Int, Int, Int, Int, Int, Int)
        switch self {
        case .up: (x0, ax, bx, y0, ay, by) = (0, 1, 0, 0, 0, 1)
        case .upMirrored: (x0, ax, bx, y0, ay, by) = (w - 1, -1, 0, 0, 0, 1)
        case .down: (x0, ax, bx, y0, ay, by) = (w - 1, -1, 0, h - 1, 0, -1)
        case .downMirrored: (x0, ax, bx, y0, ay, by) = (0, 1, 0, h - 1, 0, -1)
        case .leftMirrored: (x0, ax, bx, y0, ay, by) = (0, 0, 1, 0, 1, 0)
        case .right: (x0, ax, bx, y0, ay, by) = (0, 0, 1, h - 1, -1, 0)
        case .rightMirrored: (x0, ax, bx, y0, ay, by) = (w - 1, 0, -1, h - 1, -1, 0)
        case .left: (x0, ax, bx, y0, ay, by) = (w - 1, 0, -1, 0, 1, 0)
        }
        let start = (y0 * w + x0) * c
        let stepX = (ay * w + ax) * c
        let stepY = (by * w + bx) * c
        return image.pixels.withUnsafeBufferPointer { src in
            Image(width: ow, height: oh, channels: c) { dst in
                for y in 0..<oh {
                    var s = start + y * stepY
                    var d = y * ow * c
                    if c == 1 {
                        for _ in 0..<ow {
                            dst[d] = src[s]
                            s += stepX
                            d += 1
                        }
                    } else {
                        for _ in 0..<ow {
                            for k in 0..<c { dst[d + k] = src[s + k] }
                            s += stepX
                            d += c
                        }
                    }
                }
            }
        }
    }
}

/// Reads the orientation tag (0x0112) from EXIF data: a TIFF structure, optionally behind the
/// "Exif\0\0" prefix JPEG's APP1 uses. Returns nil when absent, out of range, or malformed; every
/// read is bounds-checked, since the bytes come from the file.
public func exifOrientation(_ bytes: UnsafeRawBufferPointer) -> Orientation? {
    guard let tiff = ExifTIFF(bytes), let ifd0 = tiff.firstIFD,
          let entry = tiff.entry(0x0112, inIFDAt: ifd0) else { return nil }
    guard entry.type == 3, let value = tiff.u16(entry.field) else { return nil }
    return Orientation(rawValue: value)
}

/// EXIF data's TIFF structure, optionally behind the "Exif\0\0" prefix JPEG's APP1 uses: its
/// byte order and bounds-checked reads, since the bytes come from the file.
struct ExifTIFF {
    let bytes: UnsafeRawBufferPointer
    /// Where the TIFF header starts (after the prefix, if any); IFD offsets count from here.
    let base: Int
    let little: Bool

    /// nil unless `bytes` start with a TIFF header (II or MM, then 42).
    init?(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        var base = 0
        if bytes.count >= 6, bytes[0] == 0x45, bytes[1] == 0x78, bytes[2] == 0x69, bytes[3] == 0x66,
           bytes[4] == 0, bytes[5] == 0 {
            base = 6
        }
        guard bytes.count >= base + 8 else { return nil }
        switch (bytes[base], bytes[base + 1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        self.base = base
        guard u16(base + 2) == 42 else { return nil }
    }

    func u16(_ at: Int) -> Int? {
        guard at >= 0, at + 2 <= bytes.count else { return nil }
        let a = Int(bytes[at]), b = Int(bytes[at + 1])
        return little ? a | b << 8 : a << 8 | b
    }

    func u32(_ at: Int) -> Int? {
        guard let lo = u16(little ? at : at + 2), let hi = u16(little ? at + 2 : at) else { return nil }
        return lo | hi << 16
    }

    /// IFD0's offset from the TIFF header.
    var firstIFD: Int? { u32(base + 4) }

    /// The entry for `wanted` in the IFD at `ifd` (from the TIFF header): its type, count and
    /// where its value field is (an absolute offset in `bytes`).
    func entry(_ wanted: Int, inIFDAt ifd: Int) -> (type: Int, count: Int, field: Int)? {
        guard let count = u16(base + ifd), count <= 1000 else { return nil }
        for i in 0..<count {
            let at = base + ifd + 2 + i * 12
            guard let tag = u16(at) else { return nil }
            if tag == wanted {
                guard let type = u16(at + 2), let n = u32(at + 4) else { return nil }
                return (type, n, at + 8)
            }
        }
        return nil
    }
}
