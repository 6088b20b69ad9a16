import Foundation
import SystemSupport

/// The SHA-256 of a file built from the bytes its upload requests send, so a large file is hashed
/// as it goes out instead of being read a second time by a separate hasher competing with the
/// transfer for the same cores.
///
/// `observe` is a `HTTPRequest.bodyObserver`: it hashes the pieces that continue the prefix hashed
/// so far, skips what it has already hashed (a request resumed from an earlier offset sends those
/// bytes again; the file is the same), and gives up on a gap (a request that starts past the
/// prefix, e.g. resumed from a checkpoint by another process). `sha256Hex` then hashes whatever
/// the requests did not send (the held-back tail) from the file.
///
/// `@unchecked Sendable`: the transfer thread feeds it while the session waits, and every stored
/// property is read and written only under `lock`.
final class SendingDigest: @unchecked Sendable {
    private let lock = NSLock()
    private var hasher: SHA256?
    /// Bytes of the file hashed so far, from its start.
    private var hashed: Int64 = 0
    private var failed = false
    private var result: String?

    init() {
        hasher = try? SHA256()
    }

    /// Feeds the piece of the body that starts at file offset `offset`.
    func observe(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        lock.withLock {
            guard !failed, result == nil, let hasher else { return }
            let end = offset + Int64(bytes.count)
            guard offset <= hashed else {
                failed = true  // a gap: these bytes cannot continue the prefix
                return
            }
            guard end > hashed else { return }  // already hashed
            do {
                try hasher.update(UnsafeRawBufferPointer(rebasing: bytes[Int(hashed - offset)...]))
                hashed = end
            } catch {
                failed = true
            }
        }
    }

    /// The whole file's digest (64 lowercase hex digits): the hashed prefix plus the rest read from
    /// `path` up to `size`. Nil when no bytes were hashed or the prefix is unusable; the caller
    /// then hashes the file on its own. Throws `TransferError` (`file-unreadable`) when the rest
    /// cannot be read.
    func sha256Hex(path: String, size: Int64) throws(TransferError) -> String? {
        lock.lock()
        defer { lock.unlock() }
        if let result { return result }
        guard !failed, hashed > 0, hashed <= size, let hasher else { return nil }
        do {
            try FileDigest.feed(hasher, path: path, offset: hashed, length: size - hashed)
            let hex = SHA256.hex(try TransferError.translating { () throws(SystemError) in try hasher.finish() })
            result = hex
            self.hasher = nil
            return hex
        } catch {
            failed = true  // the hasher holds part of the rest now
            throw error
        }
    }
}
