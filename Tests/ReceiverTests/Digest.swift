import CCrypto
import UploadProtocol

/// SHA-256 for building `Repr-Digest` values in tests, computed by libcrypto independently of the
/// receiver's own hasher.
enum Digest {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = bytes.withUnsafeBytes { raw in EVP_Digest(raw.baseAddress, raw.count, &digest, &length, EVP_sha256(), nil) }
        return Array(digest.prefix(Int(length)))
    }

    static func reprDigest(_ bytes: [UInt8]) -> String {
        ResumableUpload.reprDigest(sha256: sha256(bytes))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
