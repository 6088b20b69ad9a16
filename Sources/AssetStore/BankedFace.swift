/// One confirmed face as analysis banks it with its verdict (a row of `faces`, store migration 13).
public struct BankedFace: Sendable, Equatable {
    /// Its place among the verdict's confirmed faces, from 0.
    public var index: Int
    /// The box's left edge, in the verdict's pixels (its analysis size).
    public var x: Int
    /// The box's top edge, in the same pixels.
    public var y: Int
    /// The box's width, in the same pixels.
    public var width: Int
    /// The box's height, in the same pixels.
    public var height: Int
    /// The detector's keypoints as x, y pairs in the same pixels; nil when it gives none.
    public var keypoints: [Float]?
    /// The descriptor network's embedding (128 Floats); nil when no embedder is configured.
    public var embedding: [Float]?

    /// A face to bank.
    public init(index: Int, x: Int, y: Int, width: Int, height: Int, keypoints: [Float]? = nil, embedding: [Float]? = nil) {
        self.index = index
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.keypoints = keypoints
        self.embedding = embedding
    }
}

/// A face as the store reads it back: where it is, and the person clustering or a user gave it.
public struct FaceRecord: Sendable, Equatable {
    /// What a user decided about a face; clustering never moves a face with a decision.
    public enum Decision: String, Sendable {
        /// Taken out of its person into one of its own (`people split`).
        case split
        /// Not a person to name (`people forget`): in no person, never clustered again.
        case forgotten
    }

    /// The face's row id: what `people split` and `people forget` name.
    public var id: Int64
    /// The photo's path, relative to the library.
    public var path: String
    /// The face as banked, without its embedding (readers have no use for it).
    public var face: BankedFace
    /// The person it belongs to; nil before clustering, without an embedding, or forgotten.
    public var person: Int64?
    /// That person's name, if a user gave one.
    public var name: String?
    /// A user's decision about it.
    public var decision: Decision?
}
