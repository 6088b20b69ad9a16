import FaceAnalysis
import PhotoDecoding
import SystemSupport

/// One file as the analysis stage leaves it: everything the later stages need to know about it,
/// read while the file was open for analysis, so neither the store nor an upload opens it again.
public struct AnalysedPhoto: Sendable, Equatable {
    /// What the analysis concluded (for a file that could not be analysed, its terminal error).
    public let verdict: Verdict
    /// The verdict's JSON as the store banks it and uploads send it, encoded once, here; nil when
    /// it does not encode (a value not finite), which the pipeline turns into the photo's failure.
    public let verdictJSON: String?
    /// The content SHA-256 as 64 lowercase hex digits; nil when the file could not be read, or is
    /// not a photo PhotoDrain analyses (a video of gigabytes that is never sent is not hashed).
    public var sha256: String?
    /// The container format its bytes are; nil when it could not be decoded.
    public var format: ImageFormat?
    /// The photo's size once its EXIF orientation is applied; nil when it could not be decoded.
    public var uprightSize: Verdict.Size?
    /// The EXIF `DateTimeOriginal` as the camera wrote it (`YYYY:MM:DD HH:MM:SS`); nil when the
    /// file has none. Uploads send it as `X-Photo-Taken`.
    public var captureDate: String?
    /// The embedding of each face the verdict confirms, in the verdict's order (`FaceEmbedder`);
    /// nil when no embedder is configured or it gave none that could be used. A face too small to
    /// tell who it is (`FaceChip.minimumFaceSize`) has an empty array.
    public var faceEmbeddings: [[Float]]?

    /// An analysis result.
    public init(verdict: Verdict, sha256: String? = nil, format: ImageFormat? = nil, uprightSize: Verdict.Size? = nil,
                captureDate: String? = nil) {
        self.verdict = verdict
        verdictJSON = try? verdict.json()
        self.sha256 = sha256
        self.format = format
        self.uprightSize = uprightSize
        self.captureDate = captureDate
    }

    /// The capture date of the file at `path`, read from its metadata alone (never its pixels);
    /// nil when it has none or is no format that carries one. For a row analysed before capture
    /// dates were banked, read once when it is first uploaded.
    public static func captureDate(ofFile path: String) -> String? {
        CaptureDate.dateTimeOriginal(path: path)
    }

    /// The content SHA-256 of the file at `path`, hex. Throws `SystemError` when it cannot be read.
    static func sha256(ofFile path: String) throws -> String {
        try SHA256.hex(path: path)
    }
}
