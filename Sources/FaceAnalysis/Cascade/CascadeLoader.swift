/// Turns a parsed cascade document into a `CascadeModel`: the current `opencv-cascade-classifier`
/// layout (stage type BOOST, Haar or LBP features) and the old `opencv-haar-classifier` layout,
/// which OpenCV converts to the current one on load. Everything that indexes memory later (feature
/// indices, child links, leaf indices, rectangles) is checked here, so evaluation never needs to.
enum CascadeLoader {
    /// The cascade in `root` (the document's root element).
    static func model(from root: XMLElement) throws(FaceAnalysisError) -> CascadeModel {
        guard let top = root.children.first else {
            throw FaceAnalysisError(.invalidCascade, "the document has no top-level node")
        }
        if top.child("stageType") != nil || top.child("featureType") != nil {
            return try currentFormat(top)
        }
        if top.child("size") != nil, top.child("stages") != nil {
            return try oldFormat(top)
        }
        throw FaceAnalysisError(.invalidCascade, "<\(top.name)> is not an OpenCV cascade (no stageType or size)")
    }

    // MARK: Numbers

    private static func integers(_ element: XMLElement, _ what: String) throws(FaceAnalysisError) -> [Int] {
        var out: [Int] = []
        for word in element.words {
            guard let value = Int(word), value >= Int(Int32.min), value <= Int(Int32.max) else {
                throw FaceAnalysisError(.invalidCascade, "\(what): '\(word)' is not a 32-bit integer")
            }
            out.append(value)
        }
        return out
    }

    /// OpenCV reads every number as a double and narrows it to float where it stores a float.
    private static func real(_ word: Substring, _ what: String) throws(FaceAnalysisError) -> Double {
        guard let value = Double(word), value.isFinite else {
            throw FaceAnalysisError(.invalidCascade, "\(what): '\(word)' is not a finite number")
        }
        return value
    }

    private static func integer(_ parent: XMLElement, _ name: String) throws(FaceAnalysisError) -> Int {
        guard let element = parent.child(name) else {
            throw FaceAnalysisError(.invalidCascade, "<\(parent.name)> has no <\(name)>")
        }
        let values = try integers(element, name)
        guard values.count == 1, let value = values.first else {
            throw FaceAnalysisError(.invalidCascade, "<\(name)> must hold one integer")
        }
        return value
    }

    private static func realValue(_ parent: XMLElement, _ name: String) throws(FaceAnalysisError) -> Double {
        guard let element = parent.child(name), let word = element.words.first, element.words.count == 1 else {
            throw FaceAnalysisError(.invalidCascade, "<\(parent.name)> needs one number in <\(name)>")
        }
        return try real(word, name)
    }

    private static let thresholdEpsilon: Float = 1e-5
    private static let maxWindow = 4096

    // MARK: Current format

    private static func currentFormat(_ top: XMLElement) throws(FaceAnalysisError) -> CascadeModel {
        let stageType = top.child("stageType")?.trimmedText ?? ""
        guard stageType == "BOOST" else {
            throw FaceAnalysisError(.unsupportedCascade, "stage type '\(stageType)' is not BOOST")
        }
        let featureText = top.child("featureType")?.trimmedText ?? ""
        guard let featureType = FeatureType(rawValue: featureText) else {
            throw FaceAnalysisError(.unsupportedCascade, "feature type '\(featureText)' is not HAAR or LBP")
        }
        let width = try integer(top, "width"), height = try integer(top, "height")
        guard width > 0, height > 0, width <= maxWindow, height <= maxWindow else {
            throw FaceAnalysisError(.invalidCascade, "window size \(width)x\(height) is out of range")
        }
        guard let featureParams = top.child("featureParams") else {
            throw FaceAnalysisError(.invalidCascade, "no <featureParams>")
        }
        let categories = featureParams.child("maxCatCount") == nil ? 0 : try integer(featureParams, "maxCatCount")
        switch featureType {
        case .lbp:
            guard categories == 256 else {
                throw FaceAnalysisError(.unsupportedCascade, "LBP cascade with maxCatCount \(categories), expected 256")
            }
        case .haar:
            guard categories == 0 else {
                throw FaceAnalysisError(.unsupportedCascade, "Haar cascade with categorical splits (maxCatCount \(categories))")
            }
        }
        let subsetSize = (categories + 31) / 32
        let nodeStep = 3 + (categories > 0 ? subsetSize : 1)

        guard let stagesElement = top.child("stages"), !stagesElement.children.isEmpty else {
            throw FaceAnalysisError(.invalidCascade, "no stages")
        }
        var model = CascadeModel(featureType: featureType, windowWidth: width, windowHeight: height,
                                 stages: [], trees: [], nodes: [], leaves: [], subsets: [],
                                 subsetSize: featureType == .lbp ? subsetSize : 0,
                                 haarFeatures: [], lbpFeatures: [])
        for (stageIndex, stageElement) in stagesElement.children.enumerated() {
            let threshold = Float(try realValue(stageElement, "stageThreshold")) - thresholdEpsilon
            guard let weak = stageElement.child("weakClassifiers"), !weak.children.isEmpty else {
                throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex) has no weak classifiers")
            }
            model.stages.append(.init(threshold: threshold, firstTree: model.trees.count, treeCount: weak.children.count))
            for treeElement in weak.children {
                guard let internalNodes = treeElement.child("internalNodes"), let leafElement = treeElement.child("leafValues") else {
                    throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): a tree lacks internalNodes or leafValues")
                }
                let words = internalNodes.words
                guard !words.isEmpty, words.count % nodeStep == 0 else {
                    throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): internalNodes has \(words.count) values, not a multiple of \(nodeStep)")
                }
                let nodeCount = words.count / nodeStep
                var leaves: [Float] = []
                for word in leafElement.words { leaves.append(Float(try real(word, "leafValues"))) }
                guard leaves.count == nodeCount + 1 else {
                    throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): \(nodeCount) nodes need \(nodeCount + 1) leaves, found \(leaves.count)")
                }
                model.trees.append(.init(firstNode: model.nodes.count, nodeCount: nodeCount, firstLeaf: model.leaves.count))
                for n in 0..<nodeCount {
                    let base = n * nodeStep
                    var ints: [Int] = []
                    for k in 0..<3 {
                        guard let v = Int(words[base + k]) else {
                            throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): '\(words[base + k])' is not an integer")
                        }
                        ints.append(v)
                    }
                    var threshold: Float = 0
                    if categories > 0 {
                        for k in 0..<subsetSize {
                            guard let v = Int(words[base + 3 + k]), let word = Int32(exactly: v) ?? Int32(exactly: v - (1 << 32)) else {
                                throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): '\(words[base + 3 + k])' is not a 32-bit mask")
                            }
                            model.subsets.append(word)
                        }
                    } else {
                        threshold = Float(try real(words[base + 3], "node threshold"))
                    }
                    model.nodes.append(.init(left: ints[0], right: ints[1], feature: ints[2], threshold: threshold))
                }
                model.leaves += leaves
                try checkLinks(model.nodes[(model.nodes.count - nodeCount)...], nodeCount: nodeCount, stage: stageIndex)
            }
        }

        guard let featuresElement = top.child("features"), !featuresElement.children.isEmpty else {
            throw FaceAnalysisError(.invalidCascade, "no features")
        }
        for (index, featureElement) in featuresElement.children.enumerated() {
            switch featureType {
            case .haar:
                model.haarFeatures.append(try haarFeature(featureElement, index: index, width: width, height: height))
            case .lbp:
                guard let rectElement = featureElement.child("rect") else {
                    throw FaceAnalysisError(.invalidCascade, "LBP feature \(index) has no <rect>")
                }
                let r = try integers(rectElement, "rect")
                guard r.count == 4, r[0] >= 0, r[1] >= 0, r[2] > 0, r[3] > 0,
                      r[0] + 3 * r[2] <= width, r[1] + 3 * r[3] <= height else {
                    throw FaceAnalysisError(.invalidCascade, "LBP feature \(index): rect \(r) does not fit the \(width)x\(height) window")
                }
                model.lbpFeatures.append(.init(x: r[0], y: r[1], width: r[2], height: r[3]))
            }
        }
        let featureCount = featureType == .haar ? model.haarFeatures.count : model.lbpFeatures.count
        if let bad = model.nodes.first(where: { $0.feature < 0 || $0.feature >= featureCount }) {
            throw FaceAnalysisError(.invalidCascade, "a node uses feature \(bad.feature) of \(featureCount)")
        }
        return model
    }

    /// Children must point forward inside their tree (so a walk always ends) and leaves inside it.
    private static func checkLinks(_ nodes: ArraySlice<CascadeModel.Node>, nodeCount: Int, stage: Int) throws(FaceAnalysisError) {
        for (offset, node) in nodes.enumerated() {
            for child in [node.left, node.right] {
                let ok = child > 0 ? (child > offset && child < nodeCount) : (-child <= nodeCount)
                guard ok else {
                    throw FaceAnalysisError(.invalidCascade, "stage \(stage): tree link \(child) is out of range")
                }
            }
        }
    }

    private static func haarFeature(_ element: XMLElement, index: Int, width: Int, height: Int) throws(FaceAnalysisError) -> CascadeModel.HaarFeature {
        guard let rectsElement = element.child("rects"), (1...3).contains(rectsElement.children.count) else {
            throw FaceAnalysisError(.invalidCascade, "Haar feature \(index) needs one to three rects")
        }
        let tilted = element.child("tilted").map { (try? integers($0, "tilted"))?.first ?? 0 } ?? 0
        var rects: [CascadeModel.HaarRect] = []
        for rectElement in rectsElement.children {
            let words = rectElement.words
            guard words.count == 5, let x = Int(words[0]), let y = Int(words[1]), let w = Int(words[2]), let h = Int(words[3]) else {
                throw FaceAnalysisError(.invalidCascade, "Haar feature \(index): a rect needs 'x y w h weight'")
            }
            let weight = Float(try real(words[4], "rect weight"))
            let fits: Bool
            if tilted != 0 {
                fits = x - h >= 0 && x + w <= width && y >= 0 && y + w + h <= height && w >= 0 && h >= 0
            } else {
                fits = x >= 0 && y >= 0 && w >= 0 && h >= 0 && x + w <= width && y + h <= height
            }
            guard fits else {
                throw FaceAnalysisError(.invalidCascade, "Haar feature \(index): rect \(x) \(y) \(w) \(h) does not fit the \(width)x\(height) window")
            }
            rects.append(.init(x: x, y: y, width: w, height: h, weight: weight))
        }
        return .init(rects: rects, tilted: tilted != 0)
    }

    // MARK: Old format

    /// The pre-2.0 layout: features inline in every node, `left_val`/`left_node` children, stages
    /// chained by `parent`/`next`. Converted as OpenCV converts it: one feature per node, leaves in
    /// the order the nodes name them.
    private static func oldFormat(_ top: XMLElement) throws(FaceAnalysisError) -> CascadeModel {
        guard let sizeElement = top.child("size") else { throw FaceAnalysisError(.invalidCascade, "no <size>") }
        let size = try integers(sizeElement, "size")
        guard size.count == 2, size[0] > 0, size[1] > 0, size[0] <= maxWindow, size[1] <= maxWindow else {
            throw FaceAnalysisError(.invalidCascade, "<size> must be two positive integers")
        }
        let width = size[0], height = size[1]
        guard let stagesElement = top.child("stages"), !stagesElement.children.isEmpty else {
            throw FaceAnalysisError(.invalidCascade, "no stages")
        }
        var model = CascadeModel(featureType: .haar, windowWidth: width, windowHeight: height,
                                 stages: [], trees: [], nodes: [], leaves: [], subsets: [], subsetSize: 0,
                                 haarFeatures: [], lbpFeatures: [])
        for (stageIndex, stageElement) in stagesElement.children.enumerated() {
            if stageElement.child("parent") != nil {
                let parent = try integer(stageElement, "parent")
                let next = stageElement.child("next") == nil ? -1 : try integer(stageElement, "next")
                guard parent == stageIndex - 1, next == -1 else {
                    throw FaceAnalysisError(.unsupportedCascade, "stage \(stageIndex) is part of a tree of stages (parent \(parent), next \(next))")
                }
            }
            let threshold = Float(try realValue(stageElement, "stage_threshold")) - thresholdEpsilon
            guard let treesElement = stageElement.child("trees"), !treesElement.children.isEmpty else {
                throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex) has no trees")
            }
            model.stages.append(.init(threshold: threshold, firstTree: model.trees.count, treeCount: treesElement.children.count))
            for treeElement in treesElement.children {
                let nodeElements = treeElement.children
                guard !nodeElements.isEmpty else { throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): an empty tree") }
                let firstNode = model.nodes.count
                var leaves: [Float] = []
                for (n, nodeElement) in nodeElements.enumerated() {
                    guard let featureElement = nodeElement.child("feature") else {
                        throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): a node has no <feature>")
                    }
                    model.haarFeatures.append(try haarFeature(featureElement, index: model.haarFeatures.count, width: width, height: height))
                    var links: [Int] = []
                    for side in ["left", "right"] {
                        if nodeElement.child("\(side)_val") != nil {
                            links.append(-leaves.count)
                            leaves.append(Float(try realValue(nodeElement, "\(side)_val")))
                        } else if nodeElement.child("\(side)_node") != nil {
                            links.append(try integer(nodeElement, "\(side)_node"))
                        } else {
                            throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): node \(n) has no \(side) value or child")
                        }
                    }
                    model.nodes.append(.init(left: links[0], right: links[1], feature: model.haarFeatures.count - 1,
                                             threshold: Float(try realValue(nodeElement, "threshold"))))
                }
                guard leaves.count == nodeElements.count + 1 else {
                    throw FaceAnalysisError(.invalidCascade, "stage \(stageIndex): a tree of \(nodeElements.count) nodes has \(leaves.count) leaves")
                }
                model.trees.append(.init(firstNode: firstNode, nodeCount: nodeElements.count, firstLeaf: model.leaves.count))
                model.leaves += leaves
                try checkLinks(model.nodes[firstNode...], nodeCount: nodeElements.count, stage: stageIndex)
            }
        }
        return model
    }
}
