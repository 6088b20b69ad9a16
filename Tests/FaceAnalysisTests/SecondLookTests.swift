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
}
