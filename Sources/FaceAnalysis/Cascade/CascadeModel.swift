/// A boosted cascade as OpenCV's `CascadeClassifier` holds it after loading: stages of decision
/// trees over Haar or LBP features, in a flat layout the scanner can walk without allocating.
struct CascadeModel: Sendable {
    /// One rectangle of a Haar feature with its weight, in window coordinates.
    struct HaarRect: Sendable, Equatable {
        var x: Int, y: Int, width: Int, height: Int
        var weight: Float
    }

    /// A Haar feature: two or three weighted rectangles, upright or rotated by 45 degrees.
    struct HaarFeature: Sendable, Equatable {
        var rects: [HaarRect]
        var tilted: Bool
    }

    /// An LBP feature: the top-left 3x3 grid of blocks, each `width` x `height`.
    struct LBPFeature: Sendable, Equatable {
        var x: Int, y: Int, width: Int, height: Int
    }

    /// An internal tree node. `left`/`right` > 0 index a node of the same tree; <= 0 is the
    /// negated index of a leaf of that tree.
    struct Node: Sendable, Equatable {
        var left: Int
        var right: Int
        var feature: Int
        /// Ordered (Haar) threshold; unused for categorical (LBP) nodes.
        var threshold: Float
    }

    /// One weak classifier.
    struct Tree: Sendable, Equatable {
        var firstNode: Int
        var nodeCount: Int
        var firstLeaf: Int
    }

    /// One stage: the sum of its trees' leaves must reach `threshold`.
    struct Stage: Sendable, Equatable {
        /// The file's threshold minus 1e-5, in Float, as OpenCV stores it.
        var threshold: Float
        var firstTree: Int
        var treeCount: Int
    }

    var featureType: FeatureType
    var windowWidth: Int
    var windowHeight: Int
    var stages: [Stage]
    var trees: [Tree]
    var nodes: [Node]
    var leaves: [Float]
    /// LBP only: `subsetSize` Int32 bitmask words per node, in node order.
    var subsets: [Int32]
    var subsetSize: Int
    var haarFeatures: [HaarFeature]
    var lbpFeatures: [LBPFeature]

    /// The largest node count of any tree; 1 means every tree is a stump.
    var maxNodesPerTree: Int {
        trees.reduce(0) { max($0, $1.nodeCount) }
    }

    /// Whether any Haar feature is rotated (the scanner then builds a tilted integral image).
    var hasTiltedFeatures: Bool {
        haarFeatures.contains { $0.tilted }
    }
}
