import CNNKernels

/// `ImageRows` compiled for this set's target (see `ImageRowKernelSet`).
extension AVX2Kernels: ImageRowKernelSet {
    public static func resampleRow(_ source: UnsafePointer<UInt8>, sourceLength: Int, widened: UnsafeMutablePointer<Float>,
                                   into row: UnsafeMutablePointer<Float>, width: Int, channels: Int, first: UnsafePointer<Int>,
                                   weights: UnsafePointer<Float>, splatted: UnsafePointer<SIMD4<Float>>, taps: Int) {
        ImageRows.resampleRow(source, sourceLength: sourceLength, widened: widened, into: row, width: width, channels: channels,
                              first: first, weights: weights, splatted: splatted, taps: taps)
    }

    public static func verticalRow(_ sources: UnsafePointer<UnsafePointer<Float>>, weights: UnsafePointer<Float>, taps: Int,
                                   into target: UnsafeMutablePointer<UInt8>, count: Int) {
        ImageRows.verticalRow(sources, weights: weights, taps: taps, into: target, count: count)
    }

    public static func halveRow(_ r0: UnsafePointer<UInt8>, _ r1: UnsafePointer<UInt8>, sums: UnsafeMutablePointer<UInt16>,
                                into target: UnsafeMutablePointer<UInt8>, width: Int, channels: Int) {
        ImageRows.halveRow(r0, r1, sums: sums, into: target, width: width, channels: channels)
    }

    public static func normalizedRow(_ source: UnsafePointer<UInt8>, into row: UnsafeMutablePointer<Float>, count: Int) {
        ImageRows.normalizedRow(source, into: row, count: count)
    }
}

