import PhotoDecoding

/// A chip cut from a photo around BlazeFace's keypoints, to dlib's convention: dlib's
/// `get_face_chip_details(size 150, padding 0.25)` maps its landmarks onto its mean face (the
/// 68-point template, in a square with 0.25 of its side as margin) by a least-squares similarity
/// transform, and the chip samples the photo through it. BlazeFace has no eye corners or nose base;
/// its eyes, nose tip and mouth are fitted to the same template's eye centres (the mean of each
/// eye's six points), nose tip (point 30) and mouth centre (the mean of the inner lips, 60-67).
extension FaceChip {
    /// The template's points in chip pixels, in BlazeFace's keypoint order: the eye on the image's
    /// left (MediaPipe's "right eye"), the other eye, the nose tip, the mouth centre.
    public static let template: [SIMD2<Double>] = {
        let padding = 0.25, size = Double(FaceDescriptorNetwork.chipSize)
        // dlib's mean face (interpolation.h, points 17-67 in 0...1): the values used here.
        let meanFace: [(Double, Double)] = [(0.225492, 0.215990), (0.754761, 0.215990), (0.490127, 0.515625), (0.490127, 0.799048)]
        return meanFace.map { SIMD2(($0.0 + padding) / (1 + 2 * padding) * size, ($0.1 + padding) / (1 + 2 * padding) * size) }
    }()

    /// The similarity transform (`scale·rotation` as `a`, `b`, then `offset`) that maps chip pixels
    /// onto `points` in the photo with the least squared error: x' = a·x − b·y + tx, y' = b·x + a·y + ty.
    public static func similarity(from template: [SIMD2<Double>], to points: [SIMD2<Double>]) -> (a: Double, b: Double, offset: SIMD2<Double>) {
        let n = Double(template.count)
        let pm = template.reduce(.zero, +) / n, qm = points.reduce(.zero, +) / n
        var norm = 0.0, dot = 0.0, cross = 0.0
        for (p, q) in zip(template, points) {
            let u = p - pm, v = q - qm
            norm += u.x * u.x + u.y * u.y
            dot += u.x * v.x + u.y * v.y
            cross += u.x * v.y - u.y * v.x
        }
        let a = norm > 0 ? dot / norm : 1, b = norm > 0 ? cross / norm : 0
        return (a, b, SIMD2(qm.x - (a * pm.x - b * pm.y), qm.y - (b * pm.x + a * pm.y)))
    }

    /// The chip of the face whose BlazeFace keypoints (in `image`'s pixels, MediaPipe's order; the
    /// first four are used) are `keypoints`. A gray image gives a gray chip in all three channels;
    /// what lies outside the photo is black, as in dlib's chips. A face more than twice the chip's
    /// size is first halved (2x2 means) until it is not, as dlib's chip extraction does through its
    /// image pyramid, so the bilinear sampling never skips pixels. Throws `invalidRegion` for fewer
    /// than four keypoints or two eyes at one point.
    public static func aligned(from image: Image, keypoints: [SIMD2<Float>]) throws(FaceAnalysisError) -> FaceChip {
        guard keypoints.count >= 4, image.channels == 1 || image.channels == 3, image.width > 0, image.height > 0 else {
            throw FaceAnalysisError(.invalidRegion, "a face chip needs BlazeFace's eyes, nose and mouth in an RGB or gray image")
        }
        let points = keypoints.prefix(4).map { SIMD2<Double>(Double($0.x), Double($0.y)) }
        let eyes = points[1] - points[0]
        guard (eyes * eyes).sum() > 1e-6, points.allSatisfy({ abs($0.x) < 1e7 && abs($0.y) < 1e7 }) else {
            throw FaceAnalysisError(.invalidRegion, "the face's keypoints do not span a face")
        }
        var (a, b, offset) = similarity(from: template, to: points)
        let size = FaceDescriptorNetwork.chipSize
        // The chip's footprint in the photo, with pixels to spare for the bilinear taps: two in the
        // pixels the chip finally samples, so 2^(halvings+1) here (with the fixed 2-3 pixels of
        // before, a face halved twice had its last row and column blended with black).
        var halvings = 0
        while (a * a + b * b).squareRoot() / Double(1 << halvings) > 2, halvings < 30 { halvings += 1 }
        let margin = 2 << halvings
        let corners = [SIMD2<Double>(0, 0), SIMD2(Double(size - 1), 0), SIMD2(0, Double(size - 1)), SIMD2(Double(size - 1), Double(size - 1))]
            .map { SIMD2(a * $0.x - b * $0.y, b * $0.x + a * $0.y) + offset }
        let x0 = max(0, Int(corners.map(\.x).min()!.rounded(.down)) - margin), x1 = min(image.width, Int(corners.map(\.x).max()!.rounded(.up)) + margin + 1)
        let y0 = max(0, Int(corners.map(\.y).min()!.rounded(.down)) - margin), y1 = min(image.height, Int(corners.map(\.y).max()!.rounded(.up)) + margin + 1)
        var region = Region(image: image, x0: x0, y0: y0, x1: max(x0, x1), y1: max(y0, y1))
        offset -= SIMD2(Double(x0), Double(y0))
        while (a * a + b * b).squareRoot() > 2, region.width >= 2, region.height >= 2 {
            region = region.halved()
            // A halved pixel i covers source pixels 2i and 2i+1: its centre is at 2i + 0.5.
            a /= 2; b /= 2; offset = (offset - 0.5) / 2
        }
        var rgb = [UInt8](repeating: 0, count: size * size * 3)
        rgb.withUnsafeMutableBufferPointer { chip in
            region.sample(into: chip.baseAddress!, size: size, a: a, b: b, offset: offset)
        }
        return try FaceChip(rgb: rgb)
    }

    /// The chip of a verdict's face: `region` as the verdict holds it (`Verdict.Face.region`, with
    /// BlazeFace's keypoints to whole pixels) and `image` the image it was found in (the analysed
    /// image, whose pixels the region's are). Throws `invalidRegion` for a region without keypoints
    /// (a cascade's box), and what `aligned(from:keypoints:)` throws.
    public static func aligned(from image: Image, region: FaceRegion) throws(FaceAnalysisError) -> FaceChip {
        guard let values = region.keypoints, values.count >= 8 else {
            throw FaceAnalysisError(.invalidRegion, "a face chip needs BlazeFace's keypoints; this box has none (a cascade's?)")
        }
        return try aligned(from: image, keypoints: (0..<(values.count / 2)).map { SIMD2(values[2 * $0], values[2 * $0 + 1]) })
    }

    /// A part of a photo as RGB Floats, which the alignment halves and samples: four Floats a
    /// pixel (the fourth 0), so a tap is one `SIMD4` load. Run once per face over a few hundred
    /// thousand values, so written over buffer pointers: the bounds-checked version with a closure
    /// per tap and libm's `roundf` per channel cost about 1 ms a face, a quarter of the network's.
    private struct Region {
        var width: Int
        var height: Int
        var rgbx: [Float]

        init(width: Int, height: Int, rgbx: [Float]) {
            self.width = width
            self.height = height
            self.rgbx = rgbx
        }

        init(image: Image, x0: Int, y0: Int, x1: Int, y1: Int) {
            let width = x1 - x0, height = y1 - y0, channels = image.channels
            self.width = width
            self.height = height
            rgbx = [Float](unsafeUninitializedCapacity: width * height * 4) { out, count in
                guard width > 0, height > 0 else { count = 0; return }
                image.pixels.withUnsafeBufferPointer { pixels in
                    for y in 0..<height {
                        let row = pixels.baseAddress! + ((y0 + y) * image.width + x0) * channels
                        let to = UnsafeMutableRawPointer(out.baseAddress! + 4 * y * width)
                        for x in 0..<width {
                            let r = Float(row[channels * x])
                            let pixel = channels == 3 ? SIMD4(r, Float(row[3 * x + 1]), Float(row[3 * x + 2]), 0) : SIMD4(r, r, r, 0)
                            to.storeBytes(of: pixel, toByteOffset: 16 * x, as: SIMD4<Float>.self)
                        }
                    }
                }
                count = width * height * 4
            }
        }

        func halved() -> Region {
            let w = width / 2, h = height / 2, width = width
            let out = [Float](unsafeUninitializedCapacity: w * h * 4) { out, count in
                guard w > 0, h > 0 else { count = 0; return }
                rgbx.withUnsafeBytes { rgbx in
                    for y in 0..<h {
                        let top = 16 * (2 * y) * width, bottom = top + 16 * width
                        let to = UnsafeMutableRawPointer(out.baseAddress! + 4 * y * w)
                        for x in 0..<w {
                            func at(_ offset: Int) -> SIMD4<Float> { rgbx.loadUnaligned(fromByteOffset: offset + 32 * x, as: SIMD4<Float>.self) }
                            let a = at(top) + at(top + 16), b = at(bottom) + at(bottom + 16)
                            to.storeBytes(of: (a + b) * 0.25, toByteOffset: 16 * x, as: SIMD4<Float>.self)
                        }
                    }
                }
                count = w * h * 4
            }
            return Region(width: w, height: h, rgbx: out)
        }

        /// The chip's `size`x`size` pixels into `chip` (RGB bytes), each the bilinear value at its
        /// point through the transform (pixels outside the region black), rounded to a byte.
        func sample(into chip: UnsafeMutablePointer<UInt8>, size: Int, a: Double, b: Double, offset: SIMD2<Double>) {
            // An empty region (a face wholly outside the photo) leaves the chip black.
            guard width > 0, height > 0 else { return }
            let width = width, height = height
            rgbx.withUnsafeBytes { source in
                func pixel(_ px: Int, _ py: Int) -> SIMD4<Float> {
                    guard px >= 0, py >= 0, px < width, py < height else { return .zero }
                    return source.loadUnaligned(fromByteOffset: 16 * (py * width + px), as: SIMD4<Float>.self)
                }
                for r in 0..<size {
                    for c in 0..<size {
                        let x = a * Double(c) - b * Double(r) + offset.x, y = b * Double(c) + a * Double(r) + offset.y
                        // Floors without libm's `floor` (a call on the baseline target); the
                        // keypoints are within 1e7 of the photo, so the coordinates fit an Int.
                        var ix = Int(x), iy = Int(y)
                        if Double(ix) > x { ix -= 1 }
                        if Double(iy) > y { iy -= 1 }
                        let wx = Float(x - Double(ix)), wy = Float(y - Double(iy))
                        let p00: SIMD4<Float>, p10: SIMD4<Float>, p01: SIMD4<Float>, p11: SIMD4<Float>
                        if ix >= 0, iy >= 0, ix + 1 < width, iy + 1 < height {
                            let at = 16 * (iy * width + ix)
                            p00 = source.loadUnaligned(fromByteOffset: at, as: SIMD4<Float>.self)
                            p10 = source.loadUnaligned(fromByteOffset: at + 16, as: SIMD4<Float>.self)
                            p01 = source.loadUnaligned(fromByteOffset: at + 16 * width, as: SIMD4<Float>.self)
                            p11 = source.loadUnaligned(fromByteOffset: at + 16 * width + 16, as: SIMD4<Float>.self)
                        } else {
                            (p00, p10, p01, p11) = (pixel(ix, iy), pixel(ix + 1, iy), pixel(ix, iy + 1), pixel(ix + 1, iy + 1))
                        }
                        let top = p00 * (1 - wx) + p10 * wx, bottom = p01 * (1 - wx) + p11 * wx
                        // Clamped to 0...255 and rounded half up by adding a half and truncating,
                        // without libm's `roundf` (a call on the baseline target).
                        var v = top * (1 - wy) + bottom * wy
                        v.replace(with: 0, where: v .< 0)
                        v.replace(with: 255, where: v .> 255)
                        v += 0.5
                        let to = chip + 3 * (r * size + c)
                        to[0] = UInt8(v[0]); to[1] = UInt8(v[1]); to[2] = UInt8(v[2])
                    }
                }
            }
        }
    }
}
