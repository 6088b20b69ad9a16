/// What the clustering knows of a face descriptor: 128 Floats from dlib's ResNet face descriptor
/// (two faces are the same person when their Euclidean distance is below 0.6), stored as 512
/// bytes of little-endian float32.
public enum FaceEmbedding {
    /// The number of Floats in one embedding.
    public static let dimension = 128

    /// The distance below which dlib's model calls two faces one person (its published figure).
    public static let publishedSamePersonDistance: Float = 0.6

    /// True when `values` can be clustered: 128 finite Floats.
    public static func isValid(_ values: [Float]) -> Bool {
        values.count == dimension && values.allSatisfy(\.isFinite)
    }

    /// `values` as little-endian float32 bytes (the store's BLOB form).
    public static func bytes(_ values: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 4)
        for value in values {
            let bits = value.bitPattern.littleEndian
            withUnsafeBytes(of: bits) { out.append(contentsOf: $0) }
        }
        return out
    }

    /// The Floats in little-endian float32 `bytes`; nil unless they are exactly one embedding.
    public static func floats(_ bytes: [UInt8]) -> [Float]? {
        guard bytes.count == dimension * 4 else { return nil }
        var out = [Float](repeating: 0, count: dimension)
        for i in 0..<dimension {
            let b = i * 4
            let bits = UInt32(bytes[b]) | UInt32(bytes[b + 1]) << 8 | UInt32(bytes[b + 2]) << 16 | UInt32(bytes[b + 3]) << 24
            out[i] = Float(bitPattern: bits)
        }
        return out
    }

    /// The Euclidean distance between two embeddings, summed in index order (the same bits on
    /// every machine).
    public static func distance(_ a: [Float], _ b: [Float]) -> Float {
        precondition(a.count == b.count, "embeddings of different lengths")
        var sum: Float = 0
        for i in a.indices {
            let d = a[i] - b[i]
            sum += d * d
        }
        return sum.squareRoot()
    }
}
