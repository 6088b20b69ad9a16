import SystemSupport
import UploadProtocol

/// SHA-256 for building `Repr-Digest` values and expected object ids in tests
/// (`SystemSupport.SHA256`, checked against the published vectors in its own tests).
enum Digest {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        (try? SHA256.digest(bytes)) ?? []
    }

    static func reprDigest(_ bytes: [UInt8]) -> String {
        ResumableUpload.reprDigest(sha256: sha256(bytes))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        SHA256.hex(bytes)
    }
}
