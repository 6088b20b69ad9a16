import PhotoDecoding

extension BlazeFace {
    /// The precision to run at unless told otherwise: int8, or fp32 on a processor without AVX2,
    /// where the int8 kernels are plain Swift and about 4x slower than the Float ones. A verdict
    /// model records the precision its scores were fitted on and is refused under the other
    /// (`Features.Spec.validate(precision:)`), since int8 scores differ from fp32's by a little.
    public static var preferredPrecision: NetworkPrecision {
        NetworkWorkspace.Kernels.best == .portable ? .fp32 : .int8
    }

    /// What an int8 detector's second looks run at. Float: with int8 looks the verdict model
    /// re-fitted on the labelled photos held out precision 0.989 against 0.990 (recall and photo
    /// labels the same), and the looks are about 5% of a photo's time.
    static let int8SecondLookPrecision = NetworkPrecision.fp32

    /// The smallest and largest value each 1x1 convolution reads when this (Float) detector runs
    /// over `images` as `detect` does (every tile of every pyramid level, `minFaceSize` per image)
    /// and takes second looks at every box of 0.3 or more: widened into `ranges`, by op index.
    /// What `NetworkCalibration` records for the int8 plan.
    public func calibrate(on images: [(image: Image, minFaceSize: Int)],
                          ranges: inout [Int: (Float, Float)]) throws(FaceAnalysisError) {
        guard precision == .fp32 else {
            throw FaceAnalysisError(.invalidParameter, "calibration measures the Float network; load the detector with precision fp32")
        }
        let options = BlazeFaceOptions()
        for (image, minFaceSize) in images {
            for level in Self.pyramid(for: image, minFaceSize: minFaceSize, maxUpscale: options.maxUpscale) {
                for tile in Self.tiles(width: level.image.width, height: level.image.height, tileSize: options.tileSize) {
                    let height = Self.inputSide(tile.height), width = Self.inputSide(tile.width)
                    let workspace = try borrowWorkspace(height: height, width: width)
                    defer { returnWorkspace(workspace) }
                    Self.fill(workspace.input, width: width, height: height, from: level.image, tile: tile, kernels: workspace.kernels)
                    workspace.run(recordingRanges: &ranges)
                }
            }
            var found = options
            found.minFaceSize = minFaceSize
            for detection in try detect(in: image, options: found) where detection.face.score >= options.secondLookMinScore {
                for width in Self.secondLookWidths {
                    try secondLookRanges(at: detection.face, in: image, faceWidth: width, ranges: &ranges)
                }
            }
        }
    }

    /// A second look's input (as `secondLook` makes it) run through the Float network, widening `ranges`.
    private func secondLookRanges(at face: FaceCandidate, in image: Image, faceWidth: Float,
                                  ranges: inout [Int: (Float, Float)]) throws(FaceAnalysisError) {
        let side = Self.secondLookSide
        guard face.width >= 0.5, face.height >= 0.5, face.width < 1e6, face.height < 1e6,
              face.xmin.isFinite, face.ymin.isFinite, image.width > 0, image.height > 0 else { return }
        let centre = SIMD2<Float>((face.xmin + face.xmax) / 2, (face.ymin + face.ymax) / 2)
        let workspace = try borrowWorkspace(height: side, width: side)
        defer { returnWorkspace(workspace) }
        Self.fillResampled(workspace.input, side: side, from: image, centre: centre, scale: faceWidth / face.width)
        workspace.run(recordingRanges: &ranges)
    }
}
