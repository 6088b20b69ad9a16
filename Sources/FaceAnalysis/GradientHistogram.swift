import Foundation

/// Histograms of gradient orientation over square cells of a resampled crop (HOG without blocks):
/// the `gradientHistogram` feature group. See `Features` for the exact definition.
enum GradientHistogram {
    /// The L2-Hys normalised cell histograms of the `side`×`side` row-major `crop`, cells in
    /// row-major order, `bins` values per cell.
    static func compute(_ crop: [Float], side: Int, cellSize: Int, bins: Int) -> [Float] {
        let cells = side / cellSize
        var histogram = [Float](repeating: 0, count: cells * cells * bins)
        let binWidth = Float.pi / Float(bins)
        for y in 0..<side {
            let up = max(y - 1, 0), down = min(y + 1, side - 1)
            for x in 0..<side {
                let leftX = max(x - 1, 0), rightX = min(x + 1, side - 1)
                let gx = crop[y * side + rightX] - crop[y * side + leftX]
                let gy = crop[down * side + x] - crop[up * side + x]
                let magnitude = (gx * gx + gy * gy).squareRoot()
                if magnitude == 0 { continue }
                var angle = atan2(gy, gx)
                if angle < 0 { angle += Float.pi }
                if angle >= Float.pi { angle -= Float.pi }
                let position = angle / binWidth - 0.5
                let lower = position.rounded(.down)
                let fraction = position - lower
                let lowerBin = (Int(lower) + bins) % bins
                let upperBin = (lowerBin + 1) % bins
                let base = ((y / cellSize) * cells + x / cellSize) * bins
                histogram[base + lowerBin] += magnitude * (1 - fraction)
                histogram[base + upperBin] += magnitude * fraction
            }
        }
        normalise(&histogram, epsilon: 1)
        for index in histogram.indices where histogram[index] > 0.2 { histogram[index] = 0.2 }
        normalise(&histogram, epsilon: 1e-6)
        return histogram
    }

    private static func normalise(_ values: inout [Float], epsilon: Float) {
        let norm = (Dot.product(values, values) + epsilon).squareRoot()
        for index in values.indices { values[index] /= norm }
    }
}
