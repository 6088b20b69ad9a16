import Testing
@testable import PhotoDecoding

@Suite struct ScaleChoiceTests {
    @Test(arguments: [
        // (width, height, target, expected denominator)
        (4000, 3000, 480, 4),   // 1/4 -> 750, 1/8 -> 375 too small
        (4000, 3000, 375, 8),   // 1/8 lands exactly on the target
        (4000, 3000, 376, 4),
        (640, 480, 480, 1),
        (640, 480, 1000, 1),    // smaller than asked: full size
        (1001, 1001, 126, 8),   // ceil(1001/8) = 126
        (1001, 1001, 127, 4),
    ])
    func chooses(width: Int, height: Int, target: Int, expected: Int) {
        #expect(jpegScaleDenominator(width: width, height: height, targetShortSide: target) == expected)
    }

    @Test func noTargetMeansFullSize() {
        #expect(jpegScaleDenominator(width: 4000, height: 3000, targetShortSide: nil) == 1)
    }
}
