@testable import FaceAnalysis
import Foundation
import PhotoDecoding
import Testing

/// The second look's input: the face centred at the chosen width, the image resampled around it,
/// black where the window leaves the image.
@Suite struct SecondLookTests {
    static func fill(_ image: Image, centre: SIMD2<Float>, scale: Float) -> [Float] {
        var input = [Float](repeating: 7, count: 192 * 192 * 3)
        input.withUnsafeMutableBufferPointer { BlazeFace.fillResampled($0, side: 192, from: image, centre: centre, scale: scale) }
        return input
    }

    static func value(_ input: [Float], x: Int, y: Int, channel: Int = 0) -> Float { input[(y * 192 + x) * 3 + channel] }

    @Test func windowPastTheCornerIsBlackAndTheImageIsKept() {
        // A white 100x100 image, the window centred on its top-left corner at 1:1.
        let white = Image(width: 100, height: 100, channels: 1, pixels: [UInt8](repeating: 255, count: 100 * 100))
        let input = Self.fill(white, centre: SIMD2(0, 0), scale: 1)
        #expect(Self.value(input, x: 10, y: 10) == -1)    // above and left of the image
        #expect(Self.value(input, x: 150, y: 10) == -1)
        #expect(abs(Self.value(input, x: 150, y: 150, channel: 2) - 1) < 1e-5)  // inside: white, all 3 channels
        #expect(input.allSatisfy { $0 >= -1 && $0 <= 1 }, "every value written, in -1...1")
    }

    @Test func shrinkingAveragesInsteadOfPickingPixels() {
        // Black-or-white noise (spread 1 in the input's units), shrunk 4x: each input pixel averages
        // 4x4 samples, so the spread drops to about 0.25; a single bilinear sample would leave 0.5.
        var generator = SeededGenerator(seed: 12345)
        let pixels = (0..<400 * 400).map { _ -> UInt8 in generator.next() >> 63 == 0 ? 0 : 255 }
        let noise = Image(width: 400, height: 400, channels: 1, pixels: pixels)
        let input = Self.fill(noise, centre: SIMD2(200, 200), scale: 0.25)
        var inside: [Float] = []
        for y in 50..<142 { for x in 50..<142 { inside.append(Self.value(input, x: x, y: y)) } }  // the image covers 46..<146
        let mean = inside.reduce(0, +) / Float(inside.count)
        let spread = (inside.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Float(inside.count)).squareRoot()
        #expect(abs(mean) < 0.05)
        #expect(spread < 0.35, "spread \(spread)")
        #expect(Self.value(input, x: 20, y: 96) == -1)  // left of the image: black
    }

    @Test func colourChannelsStayInOrder() {
        let red = Image(width: 50, height: 50, channels: 3, pixels: (0..<2500).flatMap { _ in [UInt8(255), 0, 0] })
        let input = Self.fill(red, centre: SIMD2(25, 25), scale: 2)
        #expect(abs(Self.value(input, x: 96, y: 96, channel: 0) - 1) < 1e-5)
        #expect(Self.value(input, x: 96, y: 96, channel: 1) == -1)
        #expect(Self.value(input, x: 96, y: 96, channel: 2) == -1)
        #expect(Self.value(input, x: 0, y: 0, channel: 0) == -1)  // 50 px at 2x is 100 of 192: the corner is outside
    }

    @Test("the vector fill matches the formula per channel, bit for bit", arguments: [
        (3, SIMD2<Float>(150, 100), Float(0.25)), (3, SIMD2<Float>(150, 100), 0.11), (3, SIMD2<Float>(10, 190), 0.4),
        (3, SIMD2<Float>(299, 0), 0.7), (3, SIMD2<Float>(150, 100), 1), (3, SIMD2<Float>(40, 30), 2.6),
        (3, SIMD2<Float>(-80, 100), 0.3), (3, SIMD2<Float>(1000, 1000), 0.5), (1, SIMD2<Float>(150, 100), 0.25),
        (1, SIMD2<Float>(5, 7), 1.5), (4, SIMD2<Float>(150, 100), 0.33), (4, SIMD2<Float>(290, 190), 3),
    ])
    func vectorFillMatchesThePlainFormula(channels: Int, centre: SIMD2<Float>, scale: Float) {
        var generator = SeededGenerator(seed: UInt64(channels) * 7919 + UInt64(scale * 1000))
        let image = Image(width: 301, height: 199, channels: channels,
                          pixels: (0..<301 * 199 * channels).map { _ in UInt8(truncatingIfNeeded: generator.next() >> 56) })
        for side in [128, 96] {
            var fast = [Float](repeating: 7, count: side * side * 3), plain = fast
            fast.withUnsafeMutableBufferPointer { BlazeFace.fillResampled($0, side: side, from: image, centre: centre, scale: scale) }
            plain.withUnsafeMutableBufferPointer { Self.fillResampledPlainly($0, side: side, from: image, centre: centre, scale: scale) }
            #expect(fast.map(\.bitPattern) == plain.map(\.bitPattern), "side \(side)")
        }
    }

    /// The second look's fill as first written: each sample's pixels converted a channel at a
    /// time, summed as three-lane vectors. The vector fill must give these values to the bit.
    static func fillResampledPlainly(_ input: UnsafeMutableBufferPointer<Float>, side: Int, from image: Image,
                                     centre: SIMD2<Float>, scale: Float) {
        let channels = image.channels, width = image.width, height = image.height
        let samples = Int(min(4, max(1, (1 / scale).rounded(.up))))
        let origin = centre - Float(side) / 2 / scale
        func axis(_ start: Float, _ length: Int) -> [(a: Int, b: Int, weight: Float)?] {
            (0..<side * samples).map { k in
                let position = start + (Float(k / samples) + (Float(k % samples) + 0.5) / Float(samples)) / scale - 0.5
                guard position > -1, position < Float(length) else { return nil }
                let low = Int(position.rounded(.down))
                return (min(max(low, 0), length - 1), min(max(low + 1, 0), length - 1), position - Float(low))
            }
        }
        let xs = axis(origin.x, width), ys = axis(origin.y, height)
        let norm = 1 / (127.5 * Float(samples * samples))
        var row = [SIMD3<Float>](repeating: .zero, count: side)
        image.pixels.withUnsafeBufferPointer { pixels in
            let base = pixels.baseAddress!
            func pixel(_ line: UnsafePointer<UInt8>, _ x: Int) -> SIMD3<Float> {
                let p = line + x * channels
                return channels == 1 ? SIMD3(repeating: Float(p[0])) : SIMD3(Float(p[0]), Float(p[1]), Float(p[2]))
            }
            for v in 0..<side {
                for u in 0..<side { row[u] = .zero }
                for j in 0..<samples {
                    guard let y = ys[v * samples + j] else { continue }
                    let top = base + y.a * width * channels, bottom = base + y.b * width * channels
                    for u in 0..<side {
                        var sum = SIMD3<Float>(repeating: 0)
                        for i in 0..<samples {
                            guard let x = xs[u * samples + i] else { continue }
                            let upper = pixel(top, x.a) + (pixel(top, x.b) - pixel(top, x.a)) * x.weight
                            let lower = pixel(bottom, x.a) + (pixel(bottom, x.b) - pixel(bottom, x.a)) * x.weight
                            sum += upper + (lower - upper) * y.weight
                        }
                        row[u] += sum
                    }
                }
                let out = input.baseAddress! + v * side * 3
                for u in 0..<side {
                    out[3 * u] = row[u].x * norm - 1
                    out[3 * u + 1] = row[u].y * norm - 1
                    out[3 * u + 2] = row[u].z * norm - 1
                }
            }
        }
    }
}
