import Foundation
import Synchronization
import Transfer

/// With `serve --store s3://BUCKET/PREFIX` the account book (accounts and device tokens' hashes)
/// is `PREFIX/accounts.json` in the bucket, shared by every instance, and edited by `serve --store
/// … accounts|tokens` with conditional writes (`editBook`). Each instance mirrors it into its own
/// directory once at start and then every second (a conditional GET, `If-None-Match` the ETag it
/// holds, so an unchanged book costs a `304`), where `AccessControl` reads it as ever: a token
/// revoked in the bucket stops working on every instance within about two seconds. A book gone
/// from the bucket is removed from the mirror too (no device token is then valid).
final class S3AccountBookMirror: Sendable {
    let bucket: S3Bucket
    let directory: String
    private let etag = Mutex<String?>(nil)

    static let interval: Double = 1

    init(bucket: S3Bucket, directory: String) {
        self.bucket = bucket
        self.directory = directory
    }

    /// Copies the bucket's book into the directory if it changed since the last copy.
    func sync() throws(ReceiverError) {
        let held = etag.withLock { $0 }
        switch try bucket.getIfChanged(AccountBook.fileName, etag: held) {
        case .unchanged:
            return
        case .missing:
            try Syscalls.unlinkIfPresent(AccountBook.path(in: directory))
            etag.withLock { $0 = nil }
        case .changed(let bytes, let version):
            try AccountBook.writeReplacing(AccountBook.path(in: directory), with: bytes, directory: directory, durable: false)
            etag.withLock { $0 = version }
        }
    }

    /// Syncs every `interval` until `wake` becomes readable; failures are logged and retried.
    func run(until wake: Int32, log: @Sendable (String) -> Void) {
        var failing = false
        while true {
            do {
                if try Syscalls.waitReadable(wake, timeoutMilliseconds: Int32(Self.interval * 1000)) { return }
                try sync()
                if failing { log("accounts: the bucket's \(AccountBook.fileName) is readable again") }
                failing = false
            } catch {
                if !failing { log("accounts: cannot read the bucket's \(AccountBook.fileName), keeping the copy held: \(error.message)") }
                failing = true
            }
        }
    }
}

/// The account book of a bucket store, as `serve --store … accounts|tokens` edits it.
public enum S3AccountBook {
    /// What `edit` did.
    public enum Outcome: Sendable {
        case written
        /// The book changed in the bucket since it was read: nothing was written.
        case conflict
        /// The edit left the book as it was: nothing was written.
        case unchanged
    }

    /// Runs `edit` on a copy of the bucket's book in `scratch` (a directory of the caller's: the
    /// `serve accounts|tokens` code edits a book in a directory), then writes the result back
    /// `If-Match` the version read (`If-None-Match: *` when there was none), so two edits at once
    /// never lose one: the later one is refused (`conflict`) and can be run again.
    public static func edit(in configuration: S3Configuration, scratch: String,
                         _ edit: () throws -> Void) throws -> Outcome {
        let bucket = S3Bucket(configuration: configuration)
        let path = AccountBook.path(in: scratch)
        let read = try bucket.get(AccountBook.fileName)
        if let read { try AccountBook.writeReplacing(path, with: read.bytes, directory: scratch, durable: false) }
        try edit()
        guard let edited = try? Data(contentsOf: URL(fileURLWithPath: path)), Array(edited) != read?.bytes else { return .unchanged }
        switch try bucket.put(AccountBook.fileName, Array(edited), condition: read.map { .matches($0.etag) } ?? .absent) {
        case .written: return .written
        case .conflict: return .conflict
        }
    }
}
