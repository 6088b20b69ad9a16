import PhotoDecoding

/// Confirms or rejects cascade boxes with a `LinearModel` and turns the result into a `Verdict`.
/// A value: build one per model and share it between tasks freely.
public struct FaceClassifier: Sendable {
    /// The model scoring each box.
    public let model: LinearModel
    /// The extractor for the model's feature spec.
    public let features: Features

    /// A classifier for `model`, whose boxes come from BlazeFace at `networkPrecision` (if its
    /// features use the detector's scores). Throws `featureSpecMismatch` when this build does not
    /// compute the model's features or they were fitted at another precision.
    public init(model: LinearModel, networkPrecision: NetworkPrecision = BlazeFace.preferredPrecision) throws(FaceAnalysisError) {
        self.model = model
        self.features = try Features(spec: model.spec, networkPrecision: networkPrecision)
    }

    /// Each region's probability of being a face, in order. Throws `invalidRegion` for a region that
    /// is empty or wholly outside the image.
    public func probabilities(in image: Image, regions: [FaceRegion]) throws(FaceAnalysisError) -> [Float] {
        try features.extract(from: image, regions: regions).map(model.probability)
    }

    /// Each region with its probability and whether it is confirmed (probability, rounded as the
    /// verdict records it, at or above the model's threshold). Throws `invalidRegion` as
    /// `probabilities` does.
    public func faces(in image: Image, regions: [FaceRegion]) throws(FaceAnalysisError) -> [Verdict.Face] {
        let scores = try probabilities(in: image, regions: regions)
        return zip(regions, scores).map { region, probability in
            Verdict.Face(region: region, probability: probability,
                         confirmed: Verdict.fourPlaces(probability) >= model.threshold)
        }
    }

    /// The verdict for `image` with the cascade's `regions`. `cascade` names the detector (e.g. the
    /// cascade file's name) and `milliseconds` is the analysis time the caller measured. Throws
    /// `invalidRegion` for a region that is empty or wholly outside the image.
    public func verdict(for image: Image, regions: [FaceRegion], cascade: String,
                        milliseconds: Double) throws(FaceAnalysisError) -> Verdict {
        let scores = try probabilities(in: image, regions: regions)
        // Confirmation compares the rounded probability the verdict records, so a reader of the
        // verdict always sees `confirmed == (probability >= threshold)`.
        let faces = zip(regions, scores).map { region, probability in
            Verdict.Face(region: region, probability: probability,
                         confirmed: Verdict.fourPlaces(probability) >= model.threshold)
        }
        return Verdict(faces: faces, model: model.identifier, cascade: cascade,
                       analysisSize: Verdict.Size(width: image.width, height: image.height),
                       milliseconds: milliseconds)
    }
}
