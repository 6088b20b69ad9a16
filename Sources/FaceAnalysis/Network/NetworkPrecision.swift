import CNNKernels
import Foundation

/// The arithmetic a network's 1x1 convolutions run in.
public enum NetworkPrecision: String, Sendable, CaseIterable, Codable {
    /// Float throughout, as the weights were trained.
    case fp32
    /// 1x1 convolutions on 8-bit activations and weights with Int32 sums (`NetworkCalibration`
    /// gives each one's activation range); the other steps stay Float.
    case int8
}

/// The activation range of each 1x1 convolution's input, measured by running the Float network
/// over real photos (`BlazeFace.calibrate`), for the int8 plan: each range becomes that input's
/// scale and zero point. Stored as JSON beside the weights (`<weights>.int8.json`), tied to the
/// weights' identifier.
public struct NetworkCalibration: Codable, Sendable, Equatable {
    /// The `NetworkFile.identifier` the ranges were measured on.
    public var network: String
    /// What the ranges were measured on, for the record.
    public var calibratedOn: String
    /// The range of each 1x1 convolution's input, by op index in the network file.
    public var ranges: [String: [Float]]

    public init(network: String, calibratedOn: String, ranges: [Int: (Float, Float)]) {
        self.network = network
        self.calibratedOn = calibratedOn
        var out: [String: [Float]] = [:]
        for (op, r) in ranges { out[String(op)] = [r.0, r.1] }
        self.ranges = out
    }

    /// The quantisation of op `index`'s input, or nil when it was never measured.
    func quantization(forOp index: Int) -> NetworkKernels.Quantization? {
        guard let r = ranges[String(index)], r.count == 2, r[0].isFinite, r[1].isFinite else { return nil }
        return NetworkKernels.Quantization(minimum: r[0], maximum: r[1])
    }

    /// Where the calibration of the weights at `weightsPath` lives: `x.pdnn` -> `x.int8.json`.
    public static func path(forWeights weightsPath: String) -> String {
        (weightsPath.hasSuffix(".pdnn") ? String(weightsPath.dropLast(5)) : weightsPath) + ".int8.json"
    }

    /// Reads a calibration; throws `malformedModel` when it is unreadable, or measured on other weights.
    public static func load(_ path: String, for network: NetworkFile) throws(FaceAnalysisError) -> NetworkCalibration {
        let calibration: NetworkCalibration
        do {
            calibration = try JSONDecoder().decode(NetworkCalibration.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw FaceAnalysisError(.malformedModel, "the int8 calibration \(path) cannot be read (\(error)); run with --precision fp32")
        }
        guard calibration.network == network.identifier else {
            throw FaceAnalysisError(.malformedModel, "the int8 calibration \(path) was measured on \(calibration.network), not \(network.identifier); calibrate again or run with --precision fp32")
        }
        return calibration
    }

    /// Writes the calibration as pretty JSON with sorted keys (stable diffs).
    public func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try (encoder.encode(self) + Data("\n".utf8)).write(to: URL(fileURLWithPath: path))
    }
}

/// A 1x1 convolution's weights quantised for the int8 kernels, in both layouts
/// (`NetworkKernels.Int8Layout`), with what turns its Int32 sums back into Floats.
final class QuantizedPointwise: Sendable {
    /// The input's quantisation.
    let quantization: NetworkKernels.Quantization
    /// `quads` layout (Int8) and `pairs` layout (Int16), blocks of 16 output channels.
    let quads: [Int8]
    let pairs: [Int16]
    /// Per output channel (padded to the block): the sums' start (-zeroPoint x the channel's weight
    /// sum, so the zero point costs nothing per pixel), input scale x weight scale, and the bias.
    let sumBase: [Int32]
    let multipliers: [Float]
    let bias: [Float]

    /// Quantises [O][I] weights `w` symmetrically per output channel (largest magnitude -> 127).
    init(weights w: ArraySlice<Float>, bias b: ArraySlice<Float>, outChannels: Int, inChannels: Int, inStride: Int,
         quantization: NetworkKernels.Quantization) {
        let block = NetworkKernels.int8Block
        let outPadded = (outChannels + block - 1) / block * block
        var quads = [Int8](repeating: 0, count: outPadded * inStride)
        var pairs = [Int16](repeating: 0, count: outPadded * inStride)
        var sumBase = [Int32](repeating: 0, count: outPadded)
        var multipliers = [Float](repeating: 0, count: outPadded)
        var bias = [Float](repeating: 0, count: outPadded)
        for o in 0..<outChannels {
            let row = w[(w.startIndex + o * inChannels)..<(w.startIndex + (o + 1) * inChannels)]
            let largest = row.reduce(Float(0)) { max($0, abs($1)) }
            let scale = largest > 0 ? largest / 127 : 1
            var sum: Int32 = 0
            let blockStart = (o / block) * block * inStride, lane = o % block
            for (i, v) in row.enumerated() {
                let q = Int8(max(-127, min(127, (v / scale).rounded())))
                sum += Int32(q)
                quads[blockStart + (i / 4) * block * 4 + lane * 4 + i % 4] = q
                pairs[blockStart + (i / 2) * block * 2 + lane * 2 + i % 2] = Int16(q)
            }
            sumBase[o] = -quantization.zeroPoint * sum
            multipliers[o] = quantization.scale * scale
            bias[o] = b[b.startIndex + o]
        }
        self.quantization = quantization
        self.quads = quads
        self.pairs = pairs
        self.sumBase = sumBase
        self.multipliers = multipliers
        self.bias = bias
    }
}
