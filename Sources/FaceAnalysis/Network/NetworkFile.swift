import SystemSupport
import Foundation

/// A convolutional network in PhotoDrain's own weight format (`PDNN`), as `Scripts/convert-blazeface`
/// writes it from a TensorFlow Lite model (version 1) and `Scripts/fetch-face-embedding-model` from
/// dlib's face descriptor (version 2).
///
/// Layout, all little-endian: the 8-byte magic `PDNN\0\0\0` and the version byte; a UInt32 header
/// length; the header (UTF-8 JSON: tensors, ops in execution order, the model's settings); zero
/// padding to a multiple of 16; then the weights, widened to Float as an op asks for them (`slice`): IEEE half-precision values
/// in version 1 (`data_halves` of them), and in version 2 half or single precision as the header's
/// `weights` says (`data_values` of them). The header carries the SHA-256 of the weights, so a
/// damaged file is refused rather than run.
public struct NetworkFile: Sendable {
    /// One operation of the graph, as the converter wrote it.
    public struct Operation: Decodable, Sendable {
        /// `conv`, `depthwise`, `add`, `maxpool`, `pad_channels`, `resize_bilinear`, `reshape`; in
        /// version 2 also `avgpool`, `mean` (global average pooling) and `fc` (fully connected).
        public var op: String
        /// Input tensor ids.
        public var `in`: [Int]
        /// Output tensor id.
        public var out: Int
        /// Kernel height and width (convolutions).
        public var kernel: [Int]?
        /// Stride in both directions (convolutions, pooling).
        public var stride: Int?
        /// `same` or `valid` (TensorFlow's meaning).
        public var padding: String?
        /// Explicit zero padding [top, left] (version 2, dlib's meaning: as much at the bottom and
        /// right as fits the stride).
        public var pad: [Int]?
        /// `relu` or `none`, applied to the op's result.
        public var activation: String?
        /// [offset, count] of the weights in the data section, in half-precision values.
        public var weights: [Int]?
        /// The weights' shape: [out, kh, kw, in] for `conv`, [1, kh, kw, channels] for `depthwise`,
        /// [out, in] for `fc`.
        public var weights_shape: [Int]?
        /// [offset, count] of the bias.
        public var bias: [Int]?
        /// Pooling window [height, width].
        public var size: [Int]?
        /// Zero channels added before / after (`pad_channels`).
        public var before: Int?
        public var after: Int?
        /// Resize options (`resize_bilinear`).
        public var align_corners: Bool?
        public var half_pixel_centers: Bool?
    }

    /// A tensor's shape without the batch dimension: [height, width, channels], or [count, values]
    /// for the reshaped outputs.
    public struct TensorInfo: Decodable, Sendable {
        public var shape: [Int]
        public var name: String
    }

    struct Input: Decodable, Sendable {
        var tensor: Int
        var shape: [Int]
        var range: [Float]
        var channels: String
        /// Version 2: the input becomes (value - mean[channel]) * scale.
        var mean: [Float]?
        var scale: Float?
    }

    struct Header: Decodable, Sendable {
        var format: String
        var version: Int
        var name: String
        var input: Input
        var outputs: [String: Int]
        var tensors: [String: TensorInfo]
        var ops: [Operation]
        var data_halves: Int?
        var data_values: Int?
        var weights: String?
        var data_sha256: String
    }

    /// The model's name (e.g. `blazeface-full-range`).
    public let name: String
    /// `name@` and the first 8 hex digits of the weights' SHA-256: names the exact weights in a verdict.
    public let identifier: String
    /// The input tensor's id and its [height, width, channels].
    public let inputTensor: Int
    public let inputShape: [Int]
    /// Output tensor ids by role (`regressors`, `classificators`; `embedding`).
    public let outputs: [String: Int]
    /// Every tensor's shape, by id.
    public let tensors: [Int: TensorInfo]
    /// The ops in execution order.
    public let operations: [Operation]
    /// The file's bytes, of which the weights are `valueCount` values of `valueWidth` bytes from
    /// `dataStart`. Kept as stored and widened per op: the face descriptor's 5.6 million weights as
    /// one Float array were 22 MB of fresh pages (page faults and peak memory) for a network that
    /// quantises them layer by layer.
    private let bytes: [UInt8]
    private let dataStart: Int
    private let valueWidth: Int
    /// How many weights the file holds; ops index them with their [offset, count].
    public let valueCount: Int
    /// All weights, widened to Float: a new array on each call (the networks widen op by op,
    /// through `slice`).
    public func widenedWeights() -> [Float] { values(0..<valueCount) }
    /// The format version (1 or 2).
    public let version: Int
    /// Version 2: what each input value has subtracted (per channel) and is then multiplied by.
    public let inputMean: [Float]?
    public let inputScale: Float?

    static let magic: [UInt8] = Array("PDNN".utf8) + [0, 0, 0, 1]
    static let versions: [UInt8] = [1, 2]

    /// Reads and checks the network at `path`. Throws `modelFileAccess` when it cannot be read and
    /// `malformedModel` / `unsupportedModelVersion` when it is not a version-1 or -2 PDNN file whose
    /// weights match their recorded SHA-256.
    public static func load(_ path: String) throws(FaceAnalysisError) -> NetworkFile {
        let bytes: [UInt8]
        do {
            bytes = try SystemCalls.readFile(path)
        } catch {
            throw FaceAnalysisError(.modelFileAccess, "cannot read the detector's weight file: \(error.message)", path: path)
        }
        do {
            return try NetworkFile(bytes: bytes)
        } catch {
            throw error.about(path)
        }
    }

    /// Parses a PDNN file's bytes; see `load(_:)`.
    public init(bytes: [UInt8]) throws(FaceAnalysisError) {
        func malformed(_ why: String) -> FaceAnalysisError {
            FaceAnalysisError(.malformedModel, "not a PhotoDrain network file: \(why)")
        }
        guard bytes.count >= 12 else { throw malformed("\(bytes.count) bytes is too short") }
        guard Array(bytes[0..<4]) == Array(Self.magic[0..<4]) else { throw malformed("no PDNN signature") }
        guard Array(bytes[4..<7]) == Array(Self.magic[4..<7]), Self.versions.contains(bytes[7]) else {
            throw FaceAnalysisError(.unsupportedModelVersion,
                                    "network format version \(bytes[4..<8].map(String.init).joined(separator: ".")) is not 1 or 2")
        }
        let headerLength = Int(UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24)
        guard headerLength > 0, 12 + headerLength <= bytes.count else { throw malformed("the header runs past the end of the file") }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(bytes[12..<(12 + headerLength)]))
        } catch {
            throw malformed("the header is not the expected JSON (\(error))")
        }
        guard header.format == "photodrain-cnn", header.version == Int(bytes[7]) else {
            throw FaceAnalysisError(.unsupportedModelVersion, "network \(header.format) version \(header.version) is not photodrain-cnn \(bytes[7])")
        }
        // Version 1: half precision, counted in `data_halves`; version 2: as `weights` says.
        let count: Int, width: Int
        switch (header.version, header.weights) {
        case (1, nil): (count, width) = (header.data_halves ?? -1, 2)
        case (2, "float16"): (count, width) = (header.data_values ?? -1, 2)
        case (2, "float32"): (count, width) = (header.data_values ?? -1, 4)
        default: throw malformed("weights stored as \(header.weights ?? "nothing") in version \(header.version)")
        }
        let dataStart = (12 + headerLength + 15) / 16 * 16
        guard count >= 0, dataStart + count * width == bytes.count else {
            throw malformed("the file holds \(max(0, bytes.count - dataStart)) bytes of weights, the header promises \(max(0, count) * width)")
        }
        let digest = bytes.withUnsafeBytes { (try? SHA256.digest(UnsafeRawBufferPointer(rebasing: $0[dataStart...]))).map(SHA256.hex) ?? "" }
        guard digest == header.data_sha256 else {
            throw malformed("the weights are damaged (SHA-256 \(digest.prefix(16))…, expected \(header.data_sha256.prefix(16))…)")
        }
        var tensors: [Int: TensorInfo] = [:]
        for (key, info) in header.tensors {
            guard let id = Int(key) else { throw malformed("tensor id \(key) is not a number") }
            tensors[id] = info
        }
        name = header.name
        identifier = header.name + "@" + header.data_sha256.prefix(8)
        inputTensor = header.input.tensor
        inputShape = header.input.shape
        outputs = header.outputs
        self.tensors = tensors
        operations = header.ops
        self.bytes = bytes
        self.dataStart = dataStart
        valueWidth = width
        valueCount = count
        version = header.version
        inputMean = header.input.mean
        inputScale = header.input.scale
        try validate()
    }

    /// Every reference in the ops must land inside the file: tensor ids, weight ranges, shapes.
    private func validate() throws(FaceAnalysisError) {
        func malformed(_ why: String) -> FaceAnalysisError {
            FaceAnalysisError(.malformedModel, "not a usable network: \(why)")
        }
        guard inputShape.count == 3, inputShape.allSatisfy({ $0 > 0 && $0 <= 4096 }) else { throw malformed("input shape \(inputShape)") }
        for (index, op) in operations.enumerated() {
            for id in op.in + [op.out] where tensors[id] == nil {
                throw malformed("op \(index) (\(op.op)) names tensor \(id), which is not declared")
            }
            for range in [op.weights, op.bias].compactMap({ $0 }) {
                guard range.count == 2, range[0] >= 0, range[1] >= 0, range[0] + range[1] <= valueCount else {
                    throw malformed("op \(index) (\(op.op)) reads weights \(range) outside the \(valueCount) stored")
                }
            }
        }
        // A detector (version 1) has its two heads; what a version-2 network must output, its runner checks.
        for role in ["regressors", "classificators"] where version == 1 && outputs[role] == nil {
            throw malformed("no \(role) output")
        }
    }

    /// The weights an op's [offset, count] names, widened to Float.
    func slice(_ range: [Int]?) -> ArraySlice<Float> {
        guard let range, range.count == 2 else { return [] }
        return ArraySlice(values(range[0]..<(range[0] + range[1])))
    }

    /// Half precision widens through a table of all 65,536 values: on the baseline target each
    /// `Float(Float16)` is a call into the runtime, 25 ms for the face descriptor's 5.6 million.
    private static let halves: [Float] = (0...UInt16.max).map { Float(Float16(bitPattern: $0)) }

    /// The weights at `range` (indices of values, within `valueCount`), widened to Float.
    private func values(_ range: Range<Int>) -> [Float] {
        let width = valueWidth, start = dataStart + width * range.lowerBound
        return [Float](unsafeUninitializedCapacity: range.count) { out, initialized in
            bytes.withUnsafeBytes { raw in
                if width == 2 {
                    Self.halves.withUnsafeBufferPointer { table in
                        for i in 0..<range.count {
                            out[i] = table[Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: start + 2 * i, as: UInt16.self)))]
                        }
                    }
                } else {
                    for i in 0..<range.count {
                        out[i] = Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: start + 4 * i, as: UInt32.self)))
                    }
                }
            }
            initialized = range.count
        }
    }
}
