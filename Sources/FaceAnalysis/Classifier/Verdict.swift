import Foundation
import PhotoDecoding

/// What analysis concluded about one photo: the record banked on its row and sent with its upload.
///
/// Semantics: the detector (BlazeFace by default, or a cascade) proposes boxes, the linear model
/// scores each one, and a box whose probability reaches the model's threshold is a *confirmed*
/// face. The photo's `label` is `faces` when at least one box is confirmed and `no-faces` otherwise
/// (including when the detector found nothing); its `score` is the highest box probability (0
/// without boxes). The analysis pipeline records every confirmed box and the strongest rejected
/// ones (`FacePipeline.recorded` in PhotoAnalysis). A photo that could not be decoded gets the
/// terminal `error` label with a stable code and a message, so it is not retried.
///
/// Every reader goes through this type: the store's row, the upload's `X-Verdict` and its S3
/// summary (`Verdict+Summary.swift`), `status`, `verdicts` and `report`.
///
/// Probabilities and detector scores are kept to 4 decimal places and the time to 0.001 ms, so a
/// verdict survives a JSON round trip unchanged. `json()` is compact with sorted keys: the same
/// verdict always gives the same string.
public struct Verdict: Codable, Sendable, Equatable {
    /// The photo-level outcome.
    public enum Label: String, Codable, Sendable, CaseIterable {
        /// At least one box was confirmed as a face.
        case faces
        /// No box was confirmed (or none was found).
        case noFaces = "no-faces"
        /// The photo could not be analysed; `error` says why.
        case error
        /// The file is not a photo PhotoDrain analyses (a video, a camera raw, a document, bytes of
        /// no known format); `error` says what it is. Terminal; uploaded as it is only on request.
        case unanalysable
    }

    /// One cascade box and the classifier's opinion of it.
    public struct Face: Codable, Sendable, Equatable {
        /// The box and the detector's own scores.
        public var region: FaceRegion
        /// The classifier's probability that the box is a face, to 4 decimal places.
        public var probability: Float
        /// Whether the probability reached the model's threshold.
        public var confirmed: Bool

        /// A scored box; `probability` and the region's detector score are rounded to 4 places.
        public init(region: FaceRegion, probability: Float, confirmed: Bool) {
            var rounded = region
            rounded.detectorScore = Verdict.fourPlaces(region.detectorScore)
            rounded.secondLooks = region.secondLooks?.map(Verdict.fourPlaces)
            self.region = rounded
            self.probability = Verdict.fourPlaces(probability)
            self.confirmed = confirmed
        }
    }

    /// The size of the image analysed (after DCT scaling and orientation), in pixels.
    public struct Size: Codable, Sendable, Equatable {
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int

        /// A size.
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }

    /// Why a photo has no analysis.
    public struct Failure: Codable, Sendable, Equatable {
        /// A stable code, e.g. a `DecodeError.Code` raw value such as `corrupt`.
        public var code: String
        /// What went wrong, in words.
        public var message: String

        /// A failure with a code and a message.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// A confirmed face's person, as `people` named them: sent with the upload, never banked (the
    /// store's faces table keeps them, and a user may rename or merge a person after analysis).
    public struct PersonTag: Codable, Sendable, Equatable {
        /// The face's place among the verdict's confirmed faces, from 0.
        public var face: Int
        /// The person's id in the library's store.
        public var person: Int64
        /// The person's name, if a user gave one.
        public var name: String?

        /// A face's person.
        public init(face: Int, person: Int64, name: String?) {
            self.face = face
            self.person = person
            self.name = name
        }
    }

    /// The version of this record's layout; 1.
    public var version: Int
    /// The photo-level outcome.
    public var label: Label
    /// The highest box probability; 0 without boxes or on error.
    public var score: Float
    /// The boxes recorded, in the detector's order, each with its probability.
    public var faces: [Face]
    /// The model's `identifier` (name@hash); nil on error.
    public var model: String?
    /// The cascade's identifier (e.g. its file name) when a cascade found the boxes; nil otherwise.
    public var cascade: String?
    /// The detector's identifier: BlazeFace's `name@sha8` or the cascade's file name; nil on error
    /// (and in verdicts banked before detectors other than cascades existed).
    public var detector: String?
    /// The analysed image's size; nil on error.
    public var analysisSize: Size?
    /// Wall time of the analysis (or of the failed attempt), in milliseconds, to 0.001 ms.
    public var milliseconds: Double
    /// Why the photo has no analysis; nil unless `label` is `error` or `unanalysable`.
    public var error: Failure?
    /// On the verdict a companion file (a Live Photo's video, an `.AAE`, an `.xmp`) is uploaded
    /// with: its photo's path, the photo's verdict being the rest. Nil (and absent from the JSON)
    /// on every banked verdict.
    public var companionOf: String?
    /// On the verdict a photo is uploaded with: the person of each of its confirmed faces that
    /// has one (`PersonTag`). Nil (and absent from the JSON) on every banked verdict.
    public var people: [PersonTag]?

    /// The verdict of an analysed photo: the label and score follow from the faces (see the type).
    public init(faces: [Face], model: String, cascade: String, analysisSize: Size, milliseconds: Double) {
        self.init(faces: faces, model: model, detector: cascade, analysisSize: analysisSize, milliseconds: milliseconds)
        self.cascade = cascade
    }

    /// The verdict of a photo analysed with the detector named `detector` (not a cascade).
    public init(faces: [Face], model: String, detector: String, analysisSize: Size, milliseconds: Double) {
        self.version = 1
        self.faces = faces
        self.label = faces.contains(where: \.confirmed) ? .faces : .noFaces
        self.score = faces.map(\.probability).max() ?? 0
        self.model = model
        self.cascade = nil
        self.detector = detector
        self.analysisSize = analysisSize
        self.milliseconds = Self.thousandths(milliseconds)
        self.error = nil
    }

    /// The terminal verdict of a photo that could not be analysed: labelled `unanalysable` when
    /// the file is not a photo PhotoDrain analyses, `error` otherwise.
    public init(failure: Failure, milliseconds: Double, unanalysable: Bool = false) {
        self.version = 1
        self.label = unanalysable ? .unanalysable : .error
        self.score = 0
        self.faces = []
        self.model = nil
        self.cascade = nil
        self.detector = nil
        self.analysisSize = nil
        self.milliseconds = Self.thousandths(milliseconds)
        self.error = failure
    }

    /// The terminal verdict of a photo the decoder refused; the code is the decode error's code.
    public init(decodeError: DecodeError, milliseconds: Double) {
        self.init(failure: Failure(code: decodeError.code.rawValue, message: decodeError.message),
                  milliseconds: milliseconds)
    }

    /// Compact JSON with sorted keys and unescaped slashes: stable for a given verdict.
    public func json() throws(FaceAnalysisError) -> String {
        try Self.compactJSON(self)
    }

    /// Parses a verdict from its JSON. Throws `malformedVerdict` when it is not one.
    public static func decode(json: String) throws(FaceAnalysisError) -> Verdict {
        do {
            return try JSONDecoder().decode(Verdict.self, from: Data(json.utf8))
        } catch {
            throw FaceAnalysisError(.malformedVerdict, "the text is not a verdict", cause: "\(error)")
        }
    }

    static func fourPlaces(_ value: Float) -> Float {
        value.isFinite ? (value * 10_000).rounded() / 10_000 : value
    }

    static func thousandths(_ value: Double) -> Double {
        value.isFinite ? (value * 1_000).rounded() / 1_000 : value
    }
}
