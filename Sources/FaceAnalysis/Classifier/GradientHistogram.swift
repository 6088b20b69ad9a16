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
        // L2 with ε = 1 (gray levels squared): a crop with almost no gradient energy stays near 0.
        let energy = Dot.product(histogram, histogram)
        let first = 1 / (energy + 1).squareRoot()
        for index in histogram.indices { histogram[index] *= first }
        let length = energy / (energy + 1)
        // Clip, then restore the squared length the first step left (1 for any textured crop), so
        // the clipping cannot blow a near-flat crop's rounding noise up to unit length.
        for index in histogram.indices where histogram[index] > 0.2 { histogram[index] = 0.2 }
        let clipped = Dot.product(histogram, histogram)
        if clipped > 0 {
            let second = (length / clipped).squareRoot()
            for index in histogram.indices { histogram[index] *= second }
        }
        return histogram
    }
}
