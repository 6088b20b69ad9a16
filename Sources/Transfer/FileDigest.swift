import SystemSupport

/// SHA-256 of files and bytes and HMAC-SHA256, as `SystemSupport.SHA256` computes them, with
/// failures in Transfer's words (`file-unreadable`, `cancelled`). Files are streamed in chunks,
/// never read whole, so hashing a large video costs a fixed, small amount of memory.
public enum FileDigest {
    /// The piece of a file read per step (`SHA256.fileChunk`).
    static let chunkSize = SHA256.fileChunk

    /// The SHA-256 digest (32 bytes) of the file at `path`.
    /// Throws `TransferError` (`file-unreadable`) when the file cannot be opened or read.
    public static func sha256(path: String) throws(TransferError) -> [UInt8] {
        try sha256(path: path, offset: 0, length: nil)
    }

    /// The SHA-256 digest of `length` bytes of the file at `path` from byte `offset` (to the end of
    /// the file when `length` is nil), streamed. Throws `TransferError` (`file-unreadable`) when the
    /// file cannot be read or ends before the range does.
    public static func sha256(path: String, offset start: Int64, length: Int64?) throws(TransferError) -> [UInt8] {
        try digest(path: path, offset: start, length: length, stop: nil)
    }

    /// The SHA-256 of the file at `path` as 64 lowercase hex digits (the asset's content hash and
    /// the upload's `Idempotency-Key`). Throws `TransferError` when the file cannot be read.
    public static func sha256Hex(path: String) throws(TransferError) -> String {
        SHA256.hex(try sha256(path: path))
    }

    /// As `sha256Hex(path:)`, but checks `stop` before each chunk and throws `cancelled` once it
    /// is set, so a process that is exiting can end a hashing thread within one chunk.
    static func sha256Hex(path: String, stop: CancellationFlag) throws(TransferError) -> String {
        SHA256.hex(try digest(path: path, offset: 0, length: nil, stop: stop))
    }

    /// Feeds `length` bytes of the file at `path` from `offset` (to its end when nil) to `hasher`;
    /// `stop`, when set, ends the work at the next chunk with `cancelled`. Opening and reading
    /// fail with words of their own, as they always have.
    static func feed(_ hasher: SHA256, path: String, offset: Int64, length: Int64?,
                     stop: CancellationFlag? = nil) throws(TransferError) {
        let file = try TransferError.translating { () throws(SystemError) in try ReadOnlyFile(path: path) }
        try TransferError.translating(unreadable: "the file could not be read while hashing") { () throws(SystemError) in
            try hasher.update(from: file, offset: offset, length: length, shouldStop: stop.map { flag in { flag.isCancelled } })
        }
    }

    private static func digest(path: String, offset: Int64, length: Int64?, stop: CancellationFlag?) throws(TransferError) -> [UInt8] {
        let hasher = try TransferError.translating { () throws(SystemError) in try SHA256() }
        try feed(hasher, path: path, offset: offset, length: length, stop: stop)
        return try TransferError.translating { () throws(SystemError) in try hasher.finish() }
    }

    /// The SHA-256 of bytes in memory.
    public static func sha256(bytes: [UInt8]) throws(TransferError) -> [UInt8] {
        try TransferError.translating { () throws(SystemError) in try SHA256.digest(bytes) }
    }

    /// HMAC-SHA256 of `message` under `key` (32 bytes), for request signing.
    /// Throws `TransferError` only if libcrypto fails.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) throws(TransferError) -> [UInt8] {
        try TransferError.translating { () throws(SystemError) in try SHA256.hmac(key: key, message: message) }
    }
}
