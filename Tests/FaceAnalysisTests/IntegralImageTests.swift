@testable import FaceAnalysis
import PhotoDecoding
import Testing

/// Integral tables against sums computed the slow, obvious way.
@Suite struct IntegralImageTests {
    @Test(arguments: [(1, 1), (7, 5), (9, 13), (33, 20), (64, 3)])
    func tablesMatchDirectSums(width: Int, height: Int) {
        let image = ResizeTests.pattern(width: width, height: height)
        var table = IntegralImage()
        image.pixels.withUnsafeBufferPointer { table.compute($0, width: width, height: height, tilted: true) }
        for y in 0...height {
            for x in 0...width {
                var sum = 0, squares = 0, tilted = 0
                for yy in 0..<y {
                    for xx in 0..<x {
                        let v = Int(image[xx, yy])
                        sum += v
                        squares += v * v
                    }
                }
                // OpenCV's tilted sum: pixels above row y within |xx - x + 1| <= y - yy - 1.
                for yy in 0..<y {
                    for xx in 0..<width where abs(xx - x + 1) <= y - yy - 1 { tilted += Int(image[xx, yy]) }
                }
                #expect(Int(table.sum(x: x, y: y)) == sum)
                #expect(Int(table.squareSum(x: x, y: y)) == squares)
                #expect(Int(table.tiltedSum(x: x, y: y)) == tilted, "tilted at \(x),\(y)")
            }
        }
    }

    @Test func reusedTablesShrinkAndGrow() {
        var table = IntegralImage()
        let big = ResizeTests.pattern(width: 40, height: 30), small = ResizeTests.pattern(width: 6, height: 4)
        big.pixels.withUnsafeBufferPointer { table.compute($0, width: 40, height: 30, tilted: false) }
        small.pixels.withUnsafeBufferPointer { table.compute($0, width: 6, height: 4, tilted: false) }
        let total = small.pixels.reduce(0) { $0 + Int($1) }
        #expect(Int(table.sum(x: 6, y: 4)) == total)
        #expect(table.stride == 7)
    }

    @Test func squareSumsWrapLikeOpenCV() {
        // 300 x 300 of 255 overflows 32 bits of squares; the wrapped value is what OpenCV keeps.
        let image = Image(grayWidth: 300, height: 300, value: 255)
        var table = IntegralImage()
        image.pixels.withUnsafeBufferPointer { table.compute($0, width: 300, height: 300, tilted: false) }
        #expect(table.squareSum(x: 300, y: 300) == UInt32(truncatingIfNeeded: 300 * 300 * 255 * 255))
        // A window difference stays exact.
        let window = table.squareSum(x: 200, y: 200) &- table.squareSum(x: 100, y: 200)
            &- table.squareSum(x: 200, y: 100) &+ table.squareSum(x: 100, y: 100)
        #expect(window == 100 * 100 * 255 * 255)
    }
}
