@testable import FaceAnalysis
import PhotoDecoding
import Testing

/// The network input a tile is turned into, against `Float(x) / 127.5 - 1` written out plainly:
/// every value the same to the bit, the padding black (-1), whatever the channels, with every
/// kernel set the processor runs.
struct BlazeFaceFillTests {
    static let kernelSets = NetworkWorkspace.Kernels.allCases.filter(\.isSupported)

    @Test("fill matches the plain conversion", arguments: [
        (3, 0, 0, 37, 23, 64, 32), (3, 5, 3, 29, 17, 32, 32), (1, 2, 1, 30, 20, 32, 32), (4, 1, 2, 19, 11, 32, 96),
    ])
    func fillMatchesThePlainConversion(channels: Int, x: Int, y: Int, tileWidth: Int, tileHeight: Int, width: Int, height: Int) {
        var generator = SeededGenerator(seed: UInt64(channels * 1000 + tileWidth))
        // Every byte value appears: 256 pixels of ramp first, then noise.
        let image = Image(width: 41, height: 27, channels: channels) { pixels in
            for i in pixels.indices { pixels[i] = i < 256 ? UInt8(i) : UInt8(truncatingIfNeeded: generator.next() >> 56) }
        }
        let tile = BlazeFace.Tile(x: x, y: y, width: tileWidth, height: tileHeight)
        var expected: [Float] = []
        for row in 0..<height {
            for column in 0..<width {
                for c in 0..<3 {
                    guard row < tileHeight, column < tileWidth else { expected.append(-1); continue }
                    let value = image[x + column, y + row, channels == 1 ? 0 : c]
                    expected.append(Float(value) / 127.5 - 1)
                }
            }
        }
        for kernels in Self.kernelSets {
            var input = [Float](repeating: .nan, count: width * height * 3)
            input.withUnsafeMutableBufferPointer {
                BlazeFace.fill($0, width: width, height: height, from: image, tile: tile, kernels: kernels)
            }
            #expect(input.map(\.bitPattern) == expected.map(\.bitPattern), "\(kernels)")
        }
    }

    /// The ramp covers all 256 byte values in one row of the RGB path.
    @Test func everyByteConverts() {
        let image = Image(width: 256, height: 1, channels: 3) { pixels in
            for i in pixels.indices { pixels[i] = UInt8(truncatingIfNeeded: i / 3 + 85 * (i % 3)) }
        }
        let tile = BlazeFace.Tile(x: 0, y: 0, width: 256, height: 1)
        for kernels in Self.kernelSets {
            var input = [Float](repeating: .nan, count: 256 * 96 * 3)
            input.withUnsafeMutableBufferPointer { BlazeFace.fill($0, width: 256, height: 96, from: image, tile: tile, kernels: kernels) }
            for i in 0..<(256 * 3) {
                #expect(input[i].bitPattern == (Float(image.pixels[i]) / 127.5 - 1).bitPattern, "\(kernels)")
            }
        }
    }
}
