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

    /// Lowercase hex of bytes.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes from lowercase or uppercase hex; nil when the text is not an even run of hex digits.
    static func bytes(fromHex text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let high = nibble(chars[i]), let low = nibble(chars[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
