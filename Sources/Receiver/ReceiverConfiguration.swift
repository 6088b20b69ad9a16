import Foundation
import Transfer
import UploadProtocol

/// Everything `photodrain serve` can set, with defaults suited to a LAN receiver.
/// All sizes are bytes and all durations seconds.
public struct ReceiverConfiguration: Sendable {
    /// Where objects, partial uploads and temporary files live. Nothing is written outside it.
    public var directory: String
    /// The address to listen on: an IPv4 or IPv6 literal, or "localhost".
    public var host: String
    /// The TCP port; 0 picks a free one (see `ReceiverServer.start()`).
    public var port: Int
    /// The bearer token every request but `GET /healthz` must carry, or nil for none. Surrounding
    /// spaces, tabs and line breaks (a token file's trailing newline) are ignored; a space or a
    /// control character inside is refused by `start()`, as every client refuses to send it.
    public var token: String?
    /// The largest object accepted, in bytes (`max-size` in `Upload-Limit`).
    public var maxSize: Int64
    /// Partial uploads untouched for this long are removed (by a background sweep, see
    /// `sweepInterval`; a request that finds one expired answers 404 at once).
    public var partialTTL: Double
    /// Connections served at once; more are answered 503 and closed.
    public var maxConnections: Int
    /// The longest request line (method, target, version) accepted; longer gets 414.
    public var maxRequestLineBytes: Int
    /// The largest request head (request line and headers) accepted; larger gets 431.
    public var maxHeaderBytes: Int
    /// The most header fields in one request; more gets 431.
    public var maxHeaderCount: Int
    /// The time a client has to send a whole request head once it started (slow-header defence).
    public var headerTimeout: Double
    /// The longest silence allowed while a body is being received, and while a response is sent.
    public var ioTimeout: Double
    /// How long an idle keep-alive connection is kept open.
    public var idleTimeout: Double
    /// When partial uploads are fsync'd (`serve --sync`); see `SyncMode`.
    public var syncMode: SyncMode
    /// While a body streams in, the bytes received so far are fsync'd and recorded as durable at
    /// most this often (seconds), and when a transfer is cut: what a machine crash can cost a
    /// partial upload. A kill of the receiver process costs nothing either way.
    public var checkpointInterval: Double
    /// The file naming the current kernel boot (Linux: `/proc/sys/kernel/random/boot_id`). A
    /// restart in the same boot trusts the partial files' lengths (the page cache survived); after
    /// a reboot only fsync'd bytes are kept. When it cannot be read, the receiver syncs as
    /// `SyncMode.always` does. A parameter so tests can simulate a reboot.
    public var bootIDPath: String
    /// Where one line per request goes; standard error by default. Lines never contain the token.
    public var log: @Sendable (String) -> Void
    /// The clock used for expiry and timestamps (tests pass a controllable one).
    public var now: @Sendable () -> Date
    /// Where finished objects' bytes go (`serve --layout`); see `ObjectLayout`.
    public var layout: ObjectLayout = .id
    /// How often (seconds) a background thread looks for expired uploads, and never less often
    /// than `partialTTL`. No request ever does this work.
    public var sweepInterval: Double = 60
    /// The most upload records one background pass reads. A pass that stops at this limit is
    /// followed by the next one a second later (not a `sweepInterval` later), until every record
    /// has been looked at.
    public var sweepBatch: Int = 500
    /// The background scrub's rate (`serve --scrub-rate`): every stored object's bytes are hashed
    /// again at most this many bytes per second, to find corruption that changes no file stamp
    /// (bit rot); 0 turns the scrub off. 8 MiB/s by default: a 100 GiB store is gone through in
    /// about 3.6 hours, at a small share of one core and of a disk's bandwidth.
    /// `loopback` configurations (tests, `demo`) leave it off.
    public var scrubBytesPerSecond: Int64 = ReceiverConfiguration.defaultScrubBytesPerSecond
    /// Seconds from the start of one scrub pass to the start of the next (the first begins at
    /// start); a pass that takes longer is followed at once by the next.
    public var scrubInterval: Double = 86_400
    /// The most upload requests (creations, plain uploads, appends) one device token may have in
    /// progress at once (`serve --uploads-per-token`); one more is answered `429` with
    /// `Retry-After: 1` and a problem body, so a single device cannot take every connection slot.
    /// `--token-file`'s token and a receiver without tokens have no such limit.
    public var uploadsPerToken: Int = 8
    /// Failed authentications (requests refused `401`: no token, or one that is not valid) one
    /// peer address may make in a burst (`serve --failed-auth-limit`). Past it, that address's
    /// requests without a valid token are answered `429` with `Retry-After` and a problem body
    /// (and closed at once, as a `401` is) until its count has decayed; requests with a valid
    /// token from the same address are served as ever. See `FailedAuthLimiter`.
    public var failedAuthLimit: Int = 20
    /// The seconds over which `failedAuthLimit` failures are forgiven: the count decays by
    /// `failedAuthLimit` per `failedAuthWindow` (20 per 60 s: one every 3 s).
    public var failedAuthWindow: Double = 60
    /// With `serve --store s3://BUCKET/PREFIX`: the bucket that holds every upload, object, sidecar
    /// and index (see `S3Space`), so any number of instances serve one store; nil keeps everything
    /// in `directory` (the default).
    public var s3Store: S3Configuration?
    /// The size of each multipart part an S3 store writes (S3's 5 MiB minimum by default).
    public var s3PartSize: Int = Int(S3Configuration.minimumPartSize)
    /// Test-only: seconds an S3 store's completion waits between writing a new object's sidecar
    /// and claiming its dedupe index entry, so a test can make two instances' completions of one
    /// content overlap there (`PHOTODRAIN_SERVE_S3_INDEX_PAUSE`). 0 in production.
    public var s3IndexPause: Double = 0
    /// Faults to inject on purpose (cut connections, a full disk), for tests of clients against
    /// this receiver; nil in production.
    public var faultInjection: FaultInjection?

    /// A configuration with the given directory and defaults for everything else
    /// (127.0.0.1:8080, no token, 100 GiB max size, 24 h partial TTL, 64 connections).
    public init(directory: String, host: String = "127.0.0.1", port: Int = 8080, token: String? = nil,
                maxSize: Int64 = 107_374_182_400, partialTTL: Double = 86_400, maxConnections: Int = 64,
                maxRequestLineBytes: Int = 8_192, maxHeaderBytes: Int = 32_768, maxHeaderCount: Int = 100,
                headerTimeout: Double = 10, ioTimeout: Double = 30, idleTimeout: Double = 60,
                syncMode: SyncMode = .checkpoint, checkpointInterval: Double = 5,
                bootIDPath: String = "/proc/sys/kernel/random/boot_id",
                log: @escaping @Sendable (String) -> Void = ReceiverConfiguration.standardErrorLog,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.directory = directory
        self.host = host
        self.port = port
        self.token = token
        self.maxSize = maxSize
        self.partialTTL = partialTTL
        self.maxConnections = maxConnections
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.headerTimeout = headerTimeout
        self.ioTimeout = ioTimeout
        self.idleTimeout = idleTimeout
        self.syncMode = syncMode
        self.checkpointInterval = checkpointInterval
        self.bootIDPath = bootIDPath
        self.log = log
        self.now = now
    }

    /// Where the receiver puts an object's bytes. The sidecar is `objects/<id>.json` either way,
    /// and `GET /objects/<id>/content` serves the bytes wherever they are.
    public enum ObjectLayout: String, Sendable, CaseIterable {
        /// `objects/<id>`, the id the receiver generated (the default).
        case id
        /// `files/<library path>` from the upload's `X-Photo-Path`, so the directory mirrors the
        /// client's library. `..`, `.` and empty components are never followed (a `..` component
        /// is stored as `__`), an absolute path is taken as relative, and a path already
        /// holding other content keeps it: the new object gets `~<12 hex of its SHA-256>` (then
        /// `~<id>`) before the extension. An upload without a path, or whose path cannot be
        /// made (a component too long, a file where a folder should be), goes to `objects/<id>`.
        case path
    }

    /// When the receiver fsyncs a partial upload. Either way a finished object is fsync'd and
    /// renamed into place before it is acknowledged, and every offset the receiver reports
    /// survives a kill of the receiver process (the bytes were written before it was reported).
    public enum SyncMode: String, Sendable, CaseIterable {
        /// fsync at most every `checkpointInterval` while a body streams in, and when a transfer is
        /// cut. A machine crash (power loss, kernel panic) can take a partial upload back to its last
        /// checkpoint, below an offset already reported; the client then learns the lower offset
        /// (409 or HEAD) and resends from there. The default: it costs about what a plain upload does.
        case checkpoint
        /// Also fsync before reporting any offset (HEAD, 409, the end of an append) and when an
        /// upload is created, so a reported offset survives a machine crash too. Costs a few fsyncs
        /// per request.
        case always
    }

    /// `serve --scrub-rate`'s default: 8 MiB per second.
    public static let defaultScrubBytesPerSecond: Int64 = 8 << 20

    /// Writes a log line to standard error (the default `log`).
    public static let standardErrorLog: @Sendable (String) -> Void = { Syscalls.writeStandardError($0) }

    /// A configuration for an embedded receiver on 127.0.0.1 with an ephemeral port (for `demo` and
    /// other modules' tests): start it with `ReceiverServer(configuration:).start()` to learn the port.
    /// Its background scrub is off (`scrubBytesPerSecond` 0): a test runs a pass when it wants one
    /// (`ReceiverServer.scrubOnce`).
    public static func loopback(directory: String, token: String? = nil,
                                log: @escaping @Sendable (String) -> Void = { _ in }) -> ReceiverConfiguration {
        var configuration = ReceiverConfiguration(directory: directory, host: "127.0.0.1", port: 0, token: token, log: log)
        configuration.scrubBytesPerSecond = 0
        return configuration
    }

    /// Reads a bearer token from a file (`--token-file`): its content without surrounding
    /// whitespace. Throws `.invalidConfiguration` when the file cannot be read, is empty, or holds
    /// a space or a control character inside the token (`BearerTokenText`: no client would send
    /// it, so every upload would be refused); the message names the file, never its content.
    public static func token(fromFile path: String) throws(ReceiverError) -> String {
        let bytes: [UInt8]
        do {
            bytes = try Syscalls.readFile(path, limit: 64 * 1024)
        } catch {
            throw ReceiverError(code: .invalidConfiguration, message: "cannot read token file \(path): \(error.message)",
                                systemErrno: error.systemErrno)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let token = BearerTokenText.usable(text) else {
            let problem = BearerTokenText.trimmed(text).isEmpty ? "is empty" : "holds a space or a control character inside the token, which no client sends"
            throw ReceiverError(code: .invalidConfiguration, message: "token file \(path) \(problem)")
        }
        return token
    }

    /// The token with surrounding spaces, tabs and line breaks removed; nil when absent or empty.
    var effectiveToken: String? {
        guard let token else { return nil }
        let trimmed = BearerTokenText.trimmed(token)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Throws `.invalidConfiguration` when a value cannot work.
    func validate() throws(ReceiverError) {
        func bad(_ message: String) -> ReceiverError { ReceiverError(code: .invalidConfiguration, message: message) }
        if directory.isEmpty { throw bad("the storage directory is empty") }
        if !(0...65_535).contains(port) { throw bad("port \(port) is outside 0...65535") }
        if maxSize < 0 { throw bad("max size must not be negative") }
        if !(partialTTL > 0) { throw bad("partial TTL must be positive") }
        if maxConnections < 1 { throw bad("max connections must be at least 1") }
        if maxRequestLineBytes < 64 || maxHeaderBytes < maxRequestLineBytes {
            throw bad("header limits are too small (request line >= 64, headers >= request line)")
        }
        if maxHeaderCount < 1 { throw bad("max header count must be at least 1") }
        if !(headerTimeout > 0 && ioTimeout > 0 && idleTimeout > 0) { throw bad("timeouts must be positive") }
        if !(checkpointInterval >= 0) { throw bad("the checkpoint interval must not be negative") }
        if !(sweepInterval > 0) || sweepBatch < 1 { throw bad("the expiry sweep needs a positive interval and batch") }
        if uploadsPerToken < 1 { throw bad("uploads per token must be at least 1") }
        if failedAuthLimit < 1 || !(failedAuthWindow > 0) { throw bad("the failed-authentication limit needs a count of at least 1 and a positive window") }
        if scrubBytesPerSecond < 0 || !(scrubInterval > 0) { throw bad("the scrub needs a rate of 0 (off) or more and a positive interval") }
        if let token = effectiveToken, BearerTokenText.usable(token) == nil {
            throw bad("the token holds a space or a control character, which no client sends")
        }
    }
}
