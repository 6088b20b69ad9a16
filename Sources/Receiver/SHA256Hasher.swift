#if canImport(Glibc)
import Glibc
#endif
import CCrypto

/// Incremental SHA-256 through the CCrypto shim (libcrypto). Owns the shim's context and frees
/// it in `deinit`; this file is the only one in Receiver that calls it.
///
/// `@unchecked Sendable`: used by one thread at a time. `PartialDigests` hands one from an append
/// to the next append of the same upload, which the upload's slot (`TransferRegistry`) serialises.
final class SHA256Hasher: @unchecked Sendable {
    private let context: OpaquePointer?
    private var failed = false

    init() {
        context = pd_sha256_create()
    }

    deinit {
        pd_sha256_free(context)
    }

    /// Adds bytes to the digest.
    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let context, let base = bytes.baseAddress else { return }
        if pd_sha256_update(context, base, bytes.count) != 1 { failed = true }
    }

    /// The 32-byte digest, or nil when libcrypto failed.
    func finish() -> [UInt8]? {
        guard let context, !failed else { return nil }
        var digest = [UInt8](repeating: 0, count: 32)
        guard pd_sha256_final(context, &digest) == 1 else { return nil }
        return digest
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
            let n = try Syscalls.pread(fd, into: buffer, offset: offset, context: path)
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
        guard let digest = hasher.finish() else {
            throw ReceiverError(code: .io, message: "libcrypto could not compute SHA-256")
        }
        return digest
    }

}
