import FaceAnalysis
import PhotoDecoding
import SystemSupport

/// What embedding a verdict's faces again found (`FacePipeline.embeddings(of:verdict:sha256:embedder:)`).
public enum FaceEmbeddingOutcome: Sendable, Equatable {
    /// One embedding per confirmed face, in their order.
    case embedded([[Float]])
    /// The file is no longer the one the verdict was made from: its next analysis embeds it.
    case changed
    /// It cannot be embedded from this verdict, and why (the photo unreadable now, a verdict
    /// without keypoints or its analysis size, a decode of another size).
    case failed(String)
}

extension FacePipeline {
    /// The embeddings of the faces `verdict` confirmed in the photo at `path`, for faces banked
    /// without them (analysed before descriptors existed, or with `--people off`): the photo is
    /// read once, kept only when its digest is still `sha256`, decoded at the size its verdict was
    /// made at (its faces' keypoints are in those pixels; a decode of any other size fails rather
    /// than misplace them), and each face embedded by `embedder` as analysis embeds it.
    public static func embeddings(of path: String, verdict: Verdict, sha256: String, embedder: any FaceEmbedder,
                                  maxPixels: Int? = nil) -> FaceEmbeddingOutcome {
        guard let size = verdict.analysisSize, size.width > 0, size.height > 0 else {
            return .failed("its verdict does not say the size it was analysed at")
        }
        let confirmed = verdict.faces.filter(\.confirmed)
        guard !confirmed.isEmpty, confirmed.allSatisfy({ $0.region.keypoints != nil }) else {
            return .failed("its faces have no keypoints to align by (a cascade's boxes)")
        }
        do {
            let bytes = try PhotoBytes.read(path)
            let sha = try bytes.withUnsafeBytes { (raw) throws(SystemError) in SHA256.hex(try SHA256.digest(raw)) }
            guard sha == sha256 else { return .changed }
            let image = try PhotoDecoder.decode(bytes, options: DecodeOptions(output: .rgb, targetShortSide: min(size.width, size.height),
                                                                              maxPixels: maxPixels ?? DecodeOptions.defaultMaxPixels))
            guard image.width == size.width, image.height == size.height else {
                return .failed("it decodes at \(image.width)x\(image.height), not at the \(size.width)x\(size.height) it was analysed at")
            }
            guard let found = Self.embeddings(by: embedder, image: image, verdict: verdict) else {
                return .failed("a face could not be aligned for its descriptor")
            }
            return .embedded(found)
        } catch let error as DecodeError {
            return .failed(error.message)
        } catch {
            return .failed("\(error)")
        }
    }
}
