import FaceAnalysis
import PhotoDecoding
import Receiver
import UploadProtocol

/// The inputs PhotoDrain reads from outside, one fuzz target each. A target must return for any
/// bytes (an error is fine); a crash, a trap or a hang is a finding.
enum FuzzTarget: String, CaseIterable {
    case jpeg, png, heif, webp, cascade, http, uploadLimit = "upload-limit"

    func run(_ bytes: [UInt8]) {
        switch self {
        case .jpeg, .png, .heif, .webp:
            // The same call the runners make on a photo's bytes; probing too, as planning does.
            _ = try? PhotoDecoder.decode(bytes: bytes)
            _ = try? PhotoDecoder.decode(bytes: bytes, options: DecodeOptions(output: .rgb, targetShortSide: 64))
        case .cascade:
            _ = try? CascadeClassifier(xml: bytes)
        case .http:
            if let outcome = RequestHeadParsing.parse(bytes), outcome.refusal == nil {
                // An accepted head always has a method and an origin-form (or `*`) path.
                precondition(outcome.method?.isEmpty == false, "accepted a head without a method")
                precondition(outcome.path.map { $0.hasPrefix("/") || $0 == "*" } == true, "accepted a non-origin-form target")
                precondition((outcome.contentLength ?? 0) >= 0, "negative Content-Length accepted")
            }
        case .uploadLimit:
            let text = String(decoding: bytes, as: UTF8.self)
            _ = StructuredField.dictionary(text)
            if let limits = UploadLimits(fieldValue: text) {
                // A parsed limit is never negative.
                let values = [limits.maxSize, limits.minSize, limits.maxAppendSize, limits.minAppendSize, limits.maxAge]
                precondition(values.allSatisfy { ($0 ?? 0) >= 0 }, "negative upload limit parsed")
            }
        }
    }
}
