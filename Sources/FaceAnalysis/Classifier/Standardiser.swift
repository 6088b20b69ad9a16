/// Per-feature mean and scale, fitted on training rows, so every feature enters the regression with
/// zero mean and unit deviation. A feature that never varies gets scale 1 (and so weight 0).
struct Standardiser: Equatable {
    let means: [Float]
    let scales: [Float]

    /// The means and population deviations of `rows`' columns, in Double.
    init(fitting rows: [[Float]]) {
        let dimension = rows.first?.count ?? 0
        var sums = [Double](repeating: 0, count: dimension)
        for row in rows {
            for index in 0..<dimension { sums[index] += Double(row[index]) }
        }
        let count = Double(max(rows.count, 1))
        let means = sums.map { $0 / count }
        var squares = [Double](repeating: 0, count: dimension)
        for row in rows {
            for index in 0..<dimension {
                let offset = Double(row[index]) - means[index]
                squares[index] += offset * offset
            }
        }
        self.means = means.map { Float($0) }
        self.scales = squares.map { sum in
            let deviation = (sum / count).squareRoot()
            return deviation > 1e-6 ? Float(deviation) : 1
        }
    }

    /// `row` standardised.
    func apply(_ row: [Float]) -> [Float] {
        var result = row
        for index in result.indices { result[index] = (row[index] - means[index]) / scales[index] }
        return result
    }
}
