/// The dot product of Float32 vectors, the one kernel inference and training spend their time in.
///
/// Sixteen lanes per step as two `SIMD8<Float>` accumulators (SSE2 splits each into two 128-bit
/// halves, so four multiply-adds are in flight), then one `SIMD8` step, then a scalar tail. Loads
/// are unaligned, so any buffer works. Lanes are summed in a different order from a plain loop, so
/// the result may differ from a scalar reference in the last bits.
public enum Dot {
    /// Σ a[i]·b[i] over two buffers of equal length; 0 for empty buffers.
    public static func product(_ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>) -> Float {
        precondition(a.count == b.count, "dot product of vectors of different lengths")
        let count = a.count
        guard count > 0, let baseA = a.baseAddress, let baseB = b.baseAddress else { return 0 }
        let rawA = UnsafeRawPointer(baseA)
        let rawB = UnsafeRawPointer(baseB)
        let stride = MemoryLayout<Float>.stride
        var low = SIMD8<Float>()
        var high = SIMD8<Float>()
        var index = 0
        while index + 16 <= count {
            let offset = index * stride
            low += rawA.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                * rawB.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
            high += rawA.loadUnaligned(fromByteOffset: offset + 8 * stride, as: SIMD8<Float>.self)
                * rawB.loadUnaligned(fromByteOffset: offset + 8 * stride, as: SIMD8<Float>.self)
            index += 16
        }
        if index + 8 <= count {
            let offset = index * stride
            low += rawA.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                * rawB.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
            index += 8
        }
        let lanes = low + high
        var sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]))
        while index < count {
            sum += baseA[index] * baseB[index]
            index += 1
        }
        return sum
    }

    /// Σ a[i]·b[i] over two arrays of equal length; 0 for empty arrays.
    public static func product(_ a: [Float], _ b: [Float]) -> Float {
        a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in product(pa, pb) } }
    }
}
