import Testing
@testable import FaceAnalysis

@Suite struct ClassifierDotTests {
    /// Values that are exact in Float with small integer products, so any summation order gives the
    /// scalar reference exactly.
    private static func vector(_ count: Int, seed: Int) -> [Float] {
        (0..<count).map { Float(((($0 + seed) * 7919) % 17) - 8) }
    }

    private static func reference(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Float {
        var sum: Float = 0
        for (x, y) in zip(a, b) { sum += x * y }
        return sum
    }

    @Test(arguments: [0, 1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 100, 162, 1000])
    func matchesScalarReference(length: Int) {
        let a = Self.vector(length, seed: 1), b = Self.vector(length, seed: 5)
        #expect(Dot.product(a, b) == Self.reference(a[...], b[...]))
    }

    @Test(arguments: [1, 2, 3, 5])
    func readsUnalignedStarts(offset: Int) {
        let a = Self.vector(64 + offset, seed: 3), b = Self.vector(64 + offset, seed: 11)
        for length in [0, 1, 8, 17, 40, 64] {
            let range = offset..<(offset + length)
            let simd = a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    Dot.product(UnsafeBufferPointer(rebasing: pa[range]), UnsafeBufferPointer(rebasing: pb[range]))
                }
            }
            #expect(simd == Self.reference(a[range], b[range]), "length \(length) at offset \(offset)")
        }
    }

    @Test func fractionalValuesAgreeToRounding() {
        var generator = SeededGenerator(seed: 9)
        let a = (0..<203).map { _ in Float(generator.index(below: 2001) - 1000) / 997 }
        let b = (0..<203).map { _ in Float(generator.index(below: 2001) - 1000) / 991 }
        var exact: Double = 0
        for (x, y) in zip(a, b) { exact += Double(x) * Double(y) }
        #expect(abs(Double(Dot.product(a, b)) - exact) < 1e-3)
    }
}
