extension Features {
    /// The layout of a feature vector: which groups, in which order, computed with which sizes.
    ///
    /// A model stores the spec it was trained with; a model is usable only where the same spec is
    /// computed, so any change to how a feature is computed bumps `version`.
    public struct Spec: Codable, Sendable, Equatable, Hashable, CustomStringConvertible {
        /// One group of features. Groups appear in the vector in the order the spec lists them.
        public enum Group: String, Codable, Sendable, CaseIterable {
            /// Gradient-orientation histograms of the resampled crop, one per cell,
            /// `orientationBins` unsigned bins each, L2-Hys normalised over the whole crop.
            case gradientHistogram = "gradient-histogram"
            /// The crop's mean and standard deviation, each divided by 255.
            case intensity
            /// The mean of each cell of a `layoutGrid`×`layoutGrid` grid over the crop, minus the crop
            /// mean, over the crop's standard deviation (at least 1): where the crop is dark or light.
            case layout
            /// Left-right symmetry, which faces have and most false boxes lack: for each row of the
            /// `layout` grid, the absolute difference between each cell in the left half and its
            /// mirror cell (normalised as `layout`), then the L1 distance between the gradient
            /// histogram and its own mirror image (cells flipped, orientations reflected).
            case symmetry
            /// The box's centre and size as fractions of the frame: centre x, centre y, width, height.
            case geometry
            /// The whole frame's mean and standard deviation, each divided by 255.
            case frame
            /// What the detector said about the box (`DetectorFeatures`): its score as a logit, how
            /// many raw candidates and pyramid levels support it, its size in the frame, and the
            /// geometry of BlazeFace's keypoints. Zeros where the detector gives no keypoints.
            case detector
            /// BlazeFace's second looks at the box (`FaceRegion.secondLooks`, the face 48 and 32 px
            /// wide) as logits, clipped to -10...10; -6 (a probability of 0.0025) each for a box that
            /// got none because its first score was low. Two values.
            case secondLook = "second-look"
        }

        /// The newest computation this build implements; a spec with another version is rejected.
        public static let currentVersion = 1

        /// The feature computation's version.
        public var version: Int
        /// The side, in pixels, of the square the crop is resampled to.
        public var cropSize: Int
        /// The side, in pixels, of one gradient-histogram cell; divides `cropSize`.
        public var cellSize: Int
        /// Unsigned orientation bins over 0..<180 degrees per cell.
        public var orientationBins: Int
        /// Cells per side of the `layout` grid; divides `cropSize`.
        public var layoutGrid: Int
        /// The groups, in vector order, each at most once.
        public var groups: [Group]
        /// With `secondLook`: the side of the square network input the looks ran on. Absent in
        /// models written before it was recorded, which were all fitted on 192x192 looks
        /// (`legacySecondLookSide`); nil without `secondLook`.
        public var secondLookSide: Int?
        /// The look size of a `secondLook` spec that records none.
        public static let legacySecondLookSide = 192
        /// With `detector` or `secondLook`: the precision BlazeFace ran at when the scores were
        /// fitted (int8 scores differ from Float ones by a little). Absent in models written before
        /// int8, all fitted on Float scores; nil for specs that use no detector score.
        public var networkPrecision: NetworkPrecision?

        /// A spec with the given sizes and groups; `validate()` says whether this build computes it.
        /// A spec with `secondLook` records the look size this build computes, and one with
        /// `detector` or `secondLook` the precision BlazeFace's scores come from: `networkPrecision`,
        /// else `BlazeFace.preferredPrecision` (a model fitted at another records it with `at(_:)`).
        public init(version: Int = Spec.currentVersion, cropSize: Int, cellSize: Int, orientationBins: Int,
                    layoutGrid: Int, groups: [Group], networkPrecision: NetworkPrecision? = nil) {
            self.version = version
            self.cropSize = cropSize
            self.cellSize = cellSize
            self.orientationBins = orientationBins
            self.layoutGrid = layoutGrid
            self.groups = groups
            self.secondLookSide = groups.contains(.secondLook) ? BlazeFace.secondLookSide : nil
            self.networkPrecision = groups.contains(.secondLook) || groups.contains(.detector)
                ? networkPrecision ?? BlazeFace.preferredPrecision : nil
        }

        /// This spec for scores computed at `precision` (specs without detector groups have none).
        public func at(_ precision: NetworkPrecision) -> Spec {
            var spec = self
            if spec.networkPrecision != nil { spec.networkPrecision = precision }
            return spec
        }

        /// What a crop alone can tell: gradients, intensity, layout and symmetry of a 16×16 resample
        /// (4×4 cells of 4 px, 9 bins; 4×4 layout grid): 144 + 2 + 16 + 9 = 171 features. The
        /// default, and the only spec a model trained from folders of crops should use, since crops
        /// carry no frame. 16 px is below the 25 px of the smallest training crops, so every crop is
        /// shrunk and crops from different sources end up equally sharp.
        public static let crop = Spec(cropSize: 16, cellSize: 4, orientationBins: 9, layoutGrid: 4,
                                      groups: [.gradientHistogram, .intensity, .layout, .symmetry])

        /// `crop` plus the box's geometry in its frame and the frame's statistics: 177 features.
        /// For models trained from boxes in whole photos.
        public static let cropAndFrame = Spec(cropSize: 16, cellSize: 4, orientationBins: 9, layoutGrid: 4,
                                              groups: [.gradientHistogram, .intensity, .layout, .symmetry,
                                                       .geometry, .frame])

        /// For BlazeFace boxes in whole photos: the detector's own evidence (`DetectorFeatures`), 9
        /// features, at `BlazeFace.preferredPrecision` (`at(_:)` for another). Few enough to fit
        /// from a few hundred boxes of labelled photos; with intensity, layout, geometry or gradient
        /// histograms added, held-out recall and calibration got no better on the labelled set (see
        /// Models/face-verdict.md).
        public static var detector: Spec { Spec(cropSize: 16, cellSize: 4, orientationBins: 9, layoutGrid: 4,
                                                groups: [.detector]) }

        /// `detector` plus BlazeFace's second looks at each box: 11 features. The verdict model's spec.
        public static var detectorAndSecondLook: Spec { Spec(cropSize: 16, cellSize: 4, orientationBins: 9, layoutGrid: 4,
                                                             groups: [.detector, .secondLook]) }

        /// Cells per side of the gradient-histogram grid.
        public var cellsPerSide: Int { cellSize > 0 ? cropSize / cellSize : 0 }

        /// The number of features in `group`.
        public func count(of group: Group) -> Int {
            switch group {
            case .gradientHistogram: return cellsPerSide * cellsPerSide * orientationBins
            case .intensity: return 2
            case .layout: return layoutGrid * layoutGrid
            case .symmetry: return layoutGrid * (layoutGrid / 2) + 1
            case .geometry: return 4
            case .frame: return 2
            case .detector: return DetectorFeatures.count
            case .secondLook: return BlazeFace.secondLookWidths.count
            }
        }

        /// The length of the feature vector.
        public var dimension: Int { groups.reduce(0) { $0 + count(of: $1) } }

        /// Whether any group needs the frame (the whole image) rather than only the crop.
        public var usesFrame: Bool { groups.contains(.geometry) || groups.contains(.frame) || groups.contains(.detector) || groups.contains(.secondLook) }

        /// Throws `featureSpecMismatch` unless this build computes the spec: the current version,
        /// sizes that divide evenly, each group at most once, and second looks of the size this
        /// build runs (a model fitted on other looks would be fed values it never saw).
        public func validate() throws(FaceAnalysisError) {
            guard version == Spec.currentVersion else {
                throw FaceAnalysisError(.featureSpecMismatch,
                                      "feature spec version \(version) is not computed by this build (it computes version \(Spec.currentVersion))")
            }
            guard (4...256).contains(cropSize), cellSize >= 2, cropSize % cellSize == 0,
                  (1...36).contains(orientationBins), layoutGrid >= 1, cropSize % layoutGrid == 0 else {
                throw FaceAnalysisError(.featureSpecMismatch,
                                      "feature spec sizes are not computable: \(self)")
            }
            guard !groups.isEmpty, Set(groups).count == groups.count else {
                throw FaceAnalysisError(.featureSpecMismatch,
                                      "feature spec must list each group once and at least one: \(self)")
            }
            if groups.contains(.secondLook) {
                let side = secondLookSide ?? Self.legacySecondLookSide
                guard side == BlazeFace.secondLookSide else {
                    throw FaceAnalysisError(.featureSpecMismatch,
                                          "the model was fitted on \(side)x\(side) second looks; this build runs them at \(BlazeFace.secondLookSide)x\(BlazeFace.secondLookSide): fit it again with `photodrain train --labelled`")
                }
            }
        }

        /// Throws `featureSpecMismatch` when the spec's detector scores were fitted at another
        /// precision than `precision` (a spec without detector groups fits any).
        public func validate(precision: NetworkPrecision) throws(FaceAnalysisError) {
            guard groups.contains(.secondLook) || groups.contains(.detector) else { return }
            let fitted = networkPrecision ?? .fp32
            guard fitted == precision else {
                throw FaceAnalysisError(.featureSpecMismatch,
                                      "the model was fitted on BlazeFace's \(fitted) scores; this run computes \(precision) scores: pass --precision \(fitted), or a model fitted at \(precision) (`photodrain train --labelled --precision \(precision)`)")
            }
        }

        /// A one-line summary, e.g. `v1 crop 32 cell 8 bins 9 grid 4 [gradient-histogram, intensity]`.
        public var description: String {
            "v\(version) crop \(cropSize) cell \(cellSize) bins \(orientationBins) grid \(layoutGrid) ["
                + groups.map(\.rawValue).joined(separator: ", ") + "]"
                + (groups.contains(.secondLook) ? " looks \(secondLookSide ?? Self.legacySecondLookSide)" : "")
                + (groups.contains(.secondLook) || groups.contains(.detector) ? " \(networkPrecision ?? .fp32)" : "")
                + " (\(dimension) features)"
        }
    }
}

extension Features.Spec.Group {
    /// Whether the group is computed from the resampled crop of the region's pixels.
    var readsCrop: Bool {
        switch self {
        case .gradientHistogram, .intensity, .layout, .symmetry: return true
        case .geometry, .frame, .detector, .secondLook: return false
        }
    }

    /// Whether the group reads pixels at all (the crop's, or the whole frame's for `frame`);
    /// the others depend on the box and what the detector said alone.
    var readsPixels: Bool { readsCrop || self == .frame }
}
