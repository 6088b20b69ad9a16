import PhotoDecoding

/// Resamples a rectangle of a gray image to a square of Float gray values with a separable
/// triangle (tent) filter. When shrinking, the tent widens by the shrink factor, so every source
/// pixel contributes (an area-style average); when enlarging it is plain bilinear interpolation.
enum Resampler {
    /// One output sample's taps: the first source index and a weight per consecutive source pixel.
    struct Taps {
        let first: Int
        let weights: [Float]
    }

    /// The taps mapping `sourceLength` pixels onto `outputLength` samples, pixel centres aligned.
    static func taps(sourceLength: Int, outputLength: Int) -> [Taps] {
        let scale = Float(sourceLength) / Float(outputLength)
        let support = max(scale, 1)
        var result: [Taps] = []
        result.reserveCapacity(outputLength)
        for index in 0..<outputLength {
            let centre = (Float(index) + 0.5) * scale
            let first = max(Int((centre - support).rounded(.down)), 0)
            let last = min(Int((centre + support).rounded(.up)), sourceLength - 1)
            var weights: [Float] = []
            var total: Float = 0
            for source in first...max(first, last) {
                let distance = abs(Float(source) + 0.5 - centre) / support
                let weight = max(0, 1 - distance)
                weights.append(weight)
                total += weight
            }
            if total > 0 {
                for tap in weights.indices { weights[tap] /= total }
            } else {
                // Unreachable for positive lengths (the nearest pixel is always within the support),
                // kept so a degenerate input still yields the nearest pixel rather than zero.
                weights = [Float](repeating: 0, count: weights.count)
                weights[0] = 1
            }
            result.append(Taps(first: first, weights: weights))
        }
        return result
    }

    /// The `side`×`side` resample of the rectangle (`x`, `y`, `width`, `height`) of `gray`, row-major.
    /// The rectangle must lie inside the image.
    static func resample(_ gray: Image, x: Int, y: Int, width: Int, height: Int, to side: Int) -> [Float] {
        let columns = taps(sourceLength: width, outputLength: side)
        let rows = taps(sourceLength: height, outputLength: side)
        let stride = gray.width
        // Horizontal pass: `height` rows of `side` samples.
        var horizontal = [Float](repeating: 0, count: height * side)
        gray.pixels.withUnsafeBufferPointer { pixels in
            for row in 0..<height {
                let base = (y + row) * stride + x
                for (column, tap) in columns.enumerated() {
                    var sum: Float = 0
                    for (offset, weight) in tap.weights.enumerated() {
                        sum += weight * Float(pixels[base + tap.first + offset])
                    }
                    horizontal[row * side + column] = sum
                }
            }
        }
        // Vertical pass.
        var output = [Float](repeating: 0, count: side * side)
        for (row, tap) in rows.enumerated() {
            for column in 0..<side {
                var sum: Float = 0
                for (offset, weight) in tap.weights.enumerated() {
                    sum += weight * horizontal[(tap.first + offset) * side + column]
                }
                output[row * side + column] = sum
            }
        }
        return output
    }
}
