import Foundation

/// Binary logistic regression fitted by full-batch Nesterov-accelerated gradient descent.
///
/// The objective is the class-balanced mean log loss plus `l2`/2·‖w‖² (the bias is not penalised):
/// each class carries half the total weight, so a folder of 300 non-faces and 100 faces does not
/// teach the model to say "no" by default. The step is 1/L, with L an upper bound of the gradient's
/// Lipschitz constant from a power iteration on the design matrix, so no learning rate needs tuning.
/// Everything runs in a fixed order from fixed starting points: the same rows give the same weights.
/// Rows should be standardised (zero mean, unit deviation, as `Trainer` does) so one step size suits every feature.
public struct LogisticRegression: Sendable, Equatable {
    /// The fitted line.
    public struct Fit: Sendable, Equatable {
        /// One weight per feature.
        public var weights: [Float]
        /// The intercept.
        public var bias: Float
        /// Iterations run before the gradient fell under the tolerance or the budget ran out.
        public var iterations: Int
        /// The objective at the returned weights.
        public var loss: Float
    }

    /// The L2 penalty on the weights.
    public var l2: Float
    /// The most gradient steps to take.
    public var maxIterations: Int
    /// Stop once the gradient's Euclidean norm is below this.
    public var tolerance: Float
    /// Whether each class carries half the weight (for folders of crops in arbitrary proportions);
    /// false fits the plain mean log loss, whose probabilities follow the data's own base rate
    /// (what a calibrated classifier needs).
    public var balanced: Bool

    /// A regression with the given penalty and stopping rule.
    public init(l2: Float = 0.001, maxIterations: Int = 3000, tolerance: Float = 1e-5, balanced: Bool = true) {
        self.l2 = l2
        self.maxIterations = maxIterations
        self.tolerance = tolerance
        self.balanced = balanced
    }

    /// Fits `rows` (each of the same length) to `labels` (true = face). Throws `insufficientData`
    /// unless both classes are present and `invalidParameter` for a negative penalty.
    public func fit(rows: [[Float]], labels: [Bool]) throws(FaceAnalysisError) -> Fit {
        guard l2 >= 0, l2.isFinite, maxIterations >= 1 else {
            throw FaceAnalysisError(.invalidParameter, "l2 must be finite and non-negative and iterations at least 1")
        }
        guard rows.count == labels.count, let dimension = rows.first?.count,
              rows.allSatisfy({ $0.count == dimension }) else {
            throw FaceAnalysisError(.insufficientData, "rows and labels must be non-empty, equally many, of one length")
        }
        let positives = labels.filter { $0 }.count
        let negatives = labels.count - positives
        guard positives > 0, negatives > 0 else {
            throw FaceAnalysisError(.insufficientData,
                                  "training needs both classes; got \(positives) faces and \(negatives) non-faces")
        }
        let count = Float(labels.count)
        let sampleWeights = balanced
            ? labels.map { $0 ? count / (2 * Float(positives)) : count / (2 * Float(negatives)) }
            : [Float](repeating: 1, count: labels.count)
        let targets = labels.map { $0 ? Float(1) : 0 }
        let lipschitz = 0.25 * (sampleWeights.max() ?? 1) * largestEigenvalue(rows) + l2
        let step = 1 / lipschitz

        var weights = [Float](repeating: 0, count: dimension)
        var bias: Float = 0
        var previousWeights = weights
        var previousBias = bias
        var iterations = 0
        var gradient = [Float](repeating: 0, count: dimension)
        for iteration in 1...maxIterations {
            iterations = iteration
            // Look-ahead point.
            let momentum = Float(iteration - 1) / Float(iteration + 2)
            var lookWeights = weights
            for index in 0..<dimension {
                lookWeights[index] += momentum * (weights[index] - previousWeights[index])
            }
            let lookBias = bias + momentum * (bias - previousBias)
            let biasGradient = self.gradient(rows: rows, targets: targets, sampleWeights: sampleWeights,
                                             weights: lookWeights, bias: lookBias, into: &gradient)
            previousWeights = weights
            previousBias = bias
            for index in 0..<dimension {
                weights[index] = lookWeights[index] - step * gradient[index]
            }
            bias = lookBias - step * biasGradient
            // Stop on the gradient at the new point, the one returned.
            let stopBias = self.gradient(rows: rows, targets: targets, sampleWeights: sampleWeights,
                                         weights: weights, bias: bias, into: &gradient)
            let norm = (Dot.product(gradient, gradient) + stopBias * stopBias).squareRoot()
            if norm < tolerance { break }
        }
        let loss = objective(rows: rows, targets: targets, sampleWeights: sampleWeights, weights: weights, bias: bias)
        return Fit(weights: weights, bias: bias, iterations: iterations, loss: loss)
    }

    /// The logistic function, computed without overflow for any finite `z`.
    public static func sigmoid(_ z: Float) -> Float {
        if z >= 0 {
            return 1 / (1 + exp(-z))
        }
        let e = exp(z)
        return e / (1 + e)
    }

    /// Writes the weight gradient into `gradient` and returns the bias gradient.
    private func gradient(rows: [[Float]], targets: [Float], sampleWeights: [Float],
                          weights: [Float], bias: Float, into gradient: inout [Float]) -> Float {
        let dimension = weights.count
        for index in 0..<dimension { gradient[index] = 0 }
        var biasGradient: Float = 0
        for (row, features) in rows.enumerated() {
            let residual = sampleWeights[row]
                * (Self.sigmoid(Dot.product(features, weights) + bias) - targets[row])
            biasGradient += residual
            features.withUnsafeBufferPointer { values in
                for index in 0..<dimension { gradient[index] += residual * values[index] }
            }
        }
        let count = Float(rows.count)
        for index in 0..<dimension { gradient[index] = gradient[index] / count + l2 * weights[index] }
        return biasGradient / count
    }

    private func objective(rows: [[Float]], targets: [Float], sampleWeights: [Float],
                           weights: [Float], bias: Float) -> Float {
        var total: Double = 0
        for (row, features) in rows.enumerated() {
            let z = Double(Dot.product(features, weights) + bias)
            // log(1 + e^z) - t·z, stably.
            let softplus = z > 0 ? z + log1p(exp(-z)) : log1p(exp(z))
            total += Double(sampleWeights[row]) * (softplus - Double(targets[row]) * z)
        }
        let penalty = 0.5 * Double(l2) * Double(Dot.product(weights, weights))
        return Float(total / Double(rows.count) + penalty)
    }

    /// An upper bound of the largest eigenvalue of (1/n)·[X 1]ᵀ[X 1]: 40 power iterations from the
    /// all-ones vector, with 10% headroom since power iteration approaches from below.
    private func largestEigenvalue(_ rows: [[Float]]) -> Float {
        let dimension = (rows.first?.count ?? 0) + 1
        var vector = [Float](repeating: 1 / Float(dimension).squareRoot(), count: dimension)
        var eigenvalue: Float = 1
        for _ in 0..<40 {
            var next = [Float](repeating: 0, count: dimension)
            for features in rows {
                let augmented = features + [1]
                let projection = Dot.product(augmented, vector)
                for index in 0..<dimension { next[index] += projection * augmented[index] }
            }
            for index in 0..<dimension { next[index] /= Float(rows.count) }
            let norm = Dot.product(next, next).squareRoot()
            guard norm > 0 else { return 1 }
            eigenvalue = norm
            for index in 0..<dimension { vector[index] = next[index] / norm }
        }
        return max(eigenvalue * 1.1, 1e-6)
    }
}
