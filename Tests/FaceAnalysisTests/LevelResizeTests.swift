import CNNKernels
@testable import FaceAnalysis
import PhotoDecoding
import Testing

/// BlazeFace's level resize against the tent filter written out plainly: every output pixel the
/// weighted sum of its source pixels, rows first, with the same taps and the same order of sums,
/// so the fast form must agree to the last bit, with every kernel set the processor runs (the row
/// loops are compiled once per set).
struct LevelResizeTests {
    static let kernelSets = NetworkWorkspace.Kernels.allCases.filter(\.isSupported)

    static func reference(_ image: Image, width: Int, height: Int) -> [UInt8] {
        let channels = image.channels
        let columns = Resampler.taps(sourceLength: image.width, outputLength: width)
        let rows = Resampler.taps(sourceLength: image.height, outputLength: height)
        var out = [UInt8](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                for c in 0..<channels {
                    var total: Float = 0
                    for (k, w) in rows[y].weights.enumerated() {
                        let sy = rows[y].first + k
                        var sum: Float = 0
                        for (j, v) in columns[x].weights.enumerated() {
                            sum += v * Float(image.pixels[(sy * image.width + columns[x].first + j) * channels + c])
                        }
                        total += w * sum
                    }
                    out[(y * width + x) * channels + c] = UInt8(clamping: Int(total + 0.5))
                }
            }
        }
        return out
    }

    @Test("scaling matches the plain tent filter bit for bit", arguments: [(1, Float(0.4)), (3, 0.8), (3, 0.37), (3, 1.7), (1, 2)])
    func scaledMatchesTheReference(channels: Int, factor: Float) {
        var generator = SeededGenerator(seed: 7)
        let image = Image(width: 53, height: 37, channels: channels) { pixels in
            for i in pixels.indices { pixels[i] = UInt8(truncatingIfNeeded: generator.next() >> 56) }
        }
        for kernels in Self.kernelSets {
            let scaled = LevelResize.scaled(image, by: factor, kernels: kernels)
            #expect(scaled.width == Int((53 * factor).rounded()) && scaled.height == Int((37 * factor).rounded()))
            #expect(scaled.pixels == Self.reference(image, width: scaled.width, height: scaled.height), "\(kernels)")
        }
    }

    /// Shapes at the edges of the fast form: one column or one row, output rows shorter than one
    /// vector of eight, and channel counts other than 1 and 3 (the general path).
    @Test("odd shapes match the plain filter too", arguments: [
        (1, 9, 3, Float(0.5)), (9, 1, 3, 0.5), (1, 1, 3, 3), (2, 5, 1, 1.5), (5, 3, 2, 0.7),
        (7, 6, 4, 0.6), (3, 40, 3, 0.4), (40, 2, 1, 0.3), (11, 11, 4, 2.2),
    ])
    func oddShapesMatchTheReference(width: Int, height: Int, channels: Int, factor: Float) {
        var generator = SeededGenerator(seed: UInt64(width * 100 + height * 10 + channels))
        let image = Image(width: width, height: height, channels: channels) { pixels in
            for i in pixels.indices { pixels[i] = UInt8(truncatingIfNeeded: generator.next() >> 56) }
        }
        for kernels in Self.kernelSets {
            let scaled = LevelResize.scaled(image, by: factor, kernels: kernels)
            #expect(scaled.channels == channels)
            #expect(scaled.pixels == Self.reference(image, width: scaled.width, height: scaled.height), "\(kernels)")
        }
    }

    static func noise(width: Int, height: Int, channels: Int, seed: UInt64) -> Image {
        var generator = SeededGenerator(seed: seed)
        return Image(width: width, height: height, channels: channels) { pixels in
            for i in pixels.indices { pixels[i] = UInt8(truncatingIfNeeded: generator.next() >> 56) }
        }
    }

    /// Halving against the 2x2 mean written out plainly: rows shorter and longer than one vector,
    /// odd sides (the last row or column dropped), each channel count.
    @Test("halving matches the plain 2x2 mean", arguments: [
        (53, 37, 3), (2, 2, 3), (3, 5, 3), (40, 9, 3), (17, 4, 1), (16, 2, 1), (35, 7, 1), (9, 6, 4), (2, 3, 4),
    ])
    func halvedMatchesTheReference(width: Int, height: Int, channels: Int) {
        let image = Self.noise(width: width, height: height, channels: channels, seed: UInt64(width * 100 + height * 10 + channels))
        var expected: [UInt8] = []
        for y in 0..<height / 2 {
            for x in 0..<width / 2 {
                for c in 0..<channels {
                    let sum = Int(image[2 * x, 2 * y, c]) + Int(image[2 * x + 1, 2 * y, c])
                        + Int(image[2 * x, 2 * y + 1, c]) + Int(image[2 * x + 1, 2 * y + 1, c])
                    expected.append(UInt8((sum + 2) / 4))
                }
            }
        }
        for kernels in Self.kernelSets {
            let halved = LevelResize.halved(image, kernels: kernels)
            #expect(halved.width == width / 2 && halved.height == height / 2 && halved.channels == channels)
            #expect(halved.pixels == expected, "\(kernels)")
        }
    }

    /// The vector rounding of `scaled` against the scalar one (`UInt8(clamping: Int(v))`) on every
    /// multiple of 1/64 from -2 to 300, and just either side of each whole and half number.
    @Test func vectorRoundingMatchesTheScalarOne() {
        var values: [Float] = []
        for k in -128...19_200 { values.append(Float(k) / 64) }
        for n in -2...300 {
            for v in [Float(n), Float(n) + 0.5] { values += [v.nextDown, v, v.nextUp] }
        }
        values += [Float.greatestFiniteMagnitude, -Float.greatestFiniteMagnitude, .infinity, -.infinity, .leastNonzeroMagnitude]
        while values.count % 16 != 0 { values.append(0) }
        for start in stride(from: 0, to: values.count, by: 16) {
            let lanes = SIMD16<Float>(values[start..<start + 16])
            let rounded = ImageRows.rounded(lanes)
            for j in 0..<16 {
                let v = lanes[j]
                let expected: UInt8 = v < 1 ? 0 : v >= 255 ? 255 : UInt8(clamping: Int(v))
                #expect(rounded[j] == expected, "\(v)")
            }
        }
    }
}
