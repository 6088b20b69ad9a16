import CCrypto
import Foundation

/// SHA-256 of files and byte arrays, through the project's libcrypto shim.
enum Digest {
    /// Lowercase hex SHA-256 of the file at `path`, read in chunks; nil when it cannot be read.
    static func sha256(ofFile path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let context = pd_sha256_create() else { return nil }
        defer { pd_sha256_free(context) }
        while true {
            // nil (or empty) at the end of the file; a read error throws.
            let read: Data?
            do { read = try handle.read(upToCount: 1 << 20) } catch { return nil }
            guard let chunk = read, !chunk.isEmpty else { break }
            let ok = chunk.withUnsafeBytes { pd_sha256_update(context, $0.baseAddress, $0.count) }
            if ok != 1 { return nil }
        }
        return finish(context)
    }

    /// Lowercase hex SHA-256 of `bytes`.
    static func sha256(_ bytes: [UInt8]) -> String? {
        guard let context = pd_sha256_create() else { return nil }
        defer { pd_sha256_free(context) }
        let ok = bytes.withUnsafeBytes { pd_sha256_update(context, $0.baseAddress, $0.count) }
        return ok == 1 ? finish(context) : nil
    }

    private static func finish(_ context: OpaquePointer) -> String? {
        var out = [UInt8](repeating: 0, count: 32)
        guard pd_sha256_final(context, &out) == 1 else { return nil }
        return out.map { String(format: "%02x", $0) }.joined()
    }
}
