import CCrypto
import UploadProtocol

/// SHA-256 for building `Repr-Digest` values in tests, computed through the C shim directly,
/// not through the receiver's hasher.
enum Digest {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        let context = pd_sha256_create()
        defer { pd_sha256_free(context) }
        var digest = [UInt8](repeating: 0, count: 32)
        _ = bytes.withUnsafeBytes { raw in pd_sha256_update(context, raw.baseAddress, raw.count) }
        _ = pd_sha256_final(context, &digest)
        return digest
    }

    static func reprDigest(_ bytes: [UInt8]) -> String {
        ResumableUpload.reprDigest(sha256: sha256(bytes))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
