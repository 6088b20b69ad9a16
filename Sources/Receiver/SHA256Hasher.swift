#if canImport(Glibc)
import Glibc
#endif
import CCrypto

/// Incremental SHA-256 over libcrypto's EVP interface. Owns the EVP context and frees it in
/// `deinit`; this file is the only one that calls libcrypto.
final class SHA256Hasher {
    private let context: OpaquePointer?

    init() {
        context = EVP_MD_CTX_new()
        if let context { EVP_DigestInit_ex(context, EVP_sha256(), nil) }
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    /// Adds bytes to the digest.
    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let context, let base = bytes.baseAddress else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The 32-byte digest, or nil when libcrypto could not allocate its context.
    func finish() -> [UInt8]? {
        guard let context else { return nil }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1, length == 32 else { return nil }
        return Array(digest.prefix(32))
    }

    /// The SHA-256 of a whole file, read in 1 MiB pieces.
    static func digest(ofFileAt path: String) throws(ReceiverError) -> [UInt8] {
        let fd = try Syscalls.open(path, O_RDONLY)
        defer { Syscalls.closeDescriptor(fd) }
        let hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let n = try Syscalls.pread(fd, into: buffer.baseAddress.unsafelyUnwrapped, count: buffer.count,
                                       offset: offset, context: path)
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
        guard let digest = hasher.finish() else {
            throw ReceiverError(code: .io, message: "libcrypto could not compute SHA-256")
        }
        return digest
    }

    /// Lowercase hex of bytes.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
