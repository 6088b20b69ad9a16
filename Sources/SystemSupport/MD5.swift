import CCrypto

/// MD5 through libcrypto, streamed. Not a content hash of PhotoDrain's (that is `SHA256`): S3 and
/// the stores that speak its protocol compute an object's ETag as the MD5 of the bytes they hold
/// (of each part's MD5s for a multipart upload) and check a `Content-MD5` against the bytes they
/// received, so the upload client computes it to make the store's own figures its proof.
/// Owns the libcrypto context and frees it in `deinit`.
///
/// `@unchecked Sendable`: used by one thread at a time.
public final class MD5: @unchecked Sendable {
    /// The length of a digest in bytes.
    public static let byteCount = Int(PD_MD5_LENGTH)

    private let context: OpaquePointer
    private var finished = false

    /// Starts a digest. Throws `digestFailed` when libcrypto cannot make one (an OpenSSL in FIPS
    /// mode refuses MD5).
    public init() throws(SystemError) {
        guard let context = pd_md5_create() else {
            throw SystemError(.digestFailed, "libcrypto could not start an MD5 computation")
        }
        self.context = context
    }

    deinit { pd_md5_free(context) }

    /// Adds bytes to the digest. Throws `digestFailed` when libcrypto fails or the digest was
    /// already finished.
    public func update(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        guard !finished else { throw SystemError(.digestFailed, "MD5 fed after it was finished") }
        guard !bytes.isEmpty else { return }
        guard pd_md5_update(context, bytes.baseAddress, bytes.count) == 1 else {
            throw SystemError(.digestFailed, "libcrypto could not compute MD5")
        }
    }

    /// The 16-byte digest. Call once; throws `digestFailed` when libcrypto fails or on a second call.
    public func finish() throws(SystemError) -> [UInt8] {
        guard !finished else { throw SystemError(.digestFailed, "MD5 finished twice") }
        finished = true
        var digest = [UInt8](repeating: 0, count: Self.byteCount)
        let ok = digest.withUnsafeMutableBufferPointer { pd_md5_final(context, $0.baseAddress) }
        guard ok == 1 else { throw SystemError(.digestFailed, "libcrypto could not finish MD5") }
        return digest
    }

    /// The digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) throws(SystemError) -> [UInt8] {
        let hasher = try MD5()
        var failure: SystemError?
        bytes.withUnsafeBytes { raw in
            do throws(SystemError) { try hasher.update(raw) } catch { failure = error }
        }
        if let failure { throw failure }
        return try hasher.finish()
    }
}
