import Dispatch
import Foundation
import Drain
import Receiver
import SystemSupport
import Transfer

/// `photodrain serve --dir DIR`: the reference receiving server.
enum ServeCommand: Command {
    static let spec = CommandSpec(
        name: "serve",
        abstract: "Run the reference receiver: resumable uploads in, objects stored atomically and deduplicated.",
        arguments: "[accounts add NAME | accounts quota NAME BYTES|off | accounts list | tokens add ACCOUNT DEVICE | tokens list | tokens revoke ID]",
        discussion: """
        Speaks "Resumable Uploads for HTTP" (interop versions 3-8) and plain uploads at /uploads.
        Objects are written to a temporary file, fsynced and renamed, with the verdict and file name
        in a JSON sidecar; a second upload with the same Idempotency-Key returns the first object's
        id and stores nothing. GET /objects lists what arrived, each object with its provenance
        (library path, mtime, size, EXIF DateTimeOriginal) when the client sent X-Photo-* headers.
        SIGINT or SIGTERM stops it; partial
        uploads survive a restart and expire after --partial-ttl (a background sweep removes them,
        at most 500 records read per pass, a pass every minute; no request waits for it).

        Durability of partial uploads (--sync): every offset the receiver reports survives a kill of
        the receiver process, whatever the mode. With 'checkpoint' (the default) partial bytes are
        fsynced every --checkpoint-interval seconds and when a transfer is cut, so a machine crash
        can take an upload back to its last checkpoint, below an offset already reported; clients
        then resume from the lower offset. With 'always' every reported offset is fsynced first
        and survives a machine crash too, at the cost of a few fsyncs per request. Finished objects
        are fsynced before they are acknowledged in both modes.

        On a bucket (--store s3://BUCKET/PREFIX, with --s3-endpoint, --s3-region and the
        credentials 'upload' takes): uploads, objects, sidecars and the dedupe indexes live in the
        bucket and nothing in the instance, so any number of instances behind a load balancer
        serve one store and any of them answers any request. A PATCH's bytes become multipart
        parts of 5 MiB (a shorter remainder is kept as an object of its own until the next PATCH),
        HEAD answers the offset the bucket holds, and two instances racing on one upload or one
        content are kept apart by conditional writes (If-Match, If-None-Match): one wins, the other
        answers 409, or with the first object for a duplicate. The expiry sweep removes abandoned
        uploads from the bucket and aborts multipart uploads no upload names once --partial-ttl
        has passed. The account book is the bucket's too (PREFIX/accounts.json): 'serve --store URL
        accounts|tokens ...' edits it there, refused if another edit came first, and every
        instance reads it again within two seconds; --dir is not taken with --store. An account's
        quota is weighed against a listing of its objects in the bucket. --layout path places
        objects under PREFIX/files/ by their library paths, each name claimed by a conditional
        write (PREFIX/names/) so two instances never place two photos at one key; the bytes are
        copied there inside the bucket once the object is complete. Not yet on a bucket: the
        scrub, and tokens' last use.

        Layout (--layout): 'id' (the default) stores each object as objects/<id>; 'path' stores it
        as files/<library path> from its X-Photo-Path, so the directory mirrors the library. '..'
        never climbs (it is stored as '__'), a leading '/' is dropped, and a path that
        already holds other content keeps it: the newcomer gets ~<12 hex of its SHA-256> before
        its extension. Sidecars stay in objects/<id>.json either way.

        Integrity: an object answers (the digest lookup, a duplicate at creation, GET /objects)
        only while its file is the one that was hashed. Each sidecar keeps the file's size, mtime,
        ctime, inode and device from then; a file whose stamp differs is hashed again before it
        answers. A background scrub hashes every object again at most --scrub-rate bytes per
        second (a pass at start, then one a day), to find what changes no stamp (bit rot). An
        object whose bytes no longer match is moved with its sidecar to quarantine/ (never
        deleted), logged with its id and digest, answers 404 from then on, and the next upload of
        those bytes stores them again.

        Accounts and device tokens (for a family's or a team's devices): 'serve accounts add NAME'
        adds an account, 'serve tokens add ACCOUNT DEVICE [--scope upload|read|admin]' makes a
        token for one device and prints it once on standard output (keep it in that device's
        --token-file); 'tokens list' shows id, account, device, scope, created and last used;
        'tokens revoke ID' ends a token. Each takes --dir, the receiver's directory. Tokens are
        kept only as SHA-256 hashes in DIR/accounts.json, written atomically (fsync and rename);
        a running serve picks up new and revoked tokens within a second or two, no restart.
        Scopes: 'upload' (the default) creates uploads, resumes its own and checks its account's
        objects by digest, nothing else; 'read' also lists and downloads its account's objects
        (restore, verify --deep); 'admin' does everything, for every account. A request outside a
        token's scope is answered 403 with a problem body naming the scope it needs.
        Limits: 'accounts add NAME --quota BYTES' (or 'accounts quota NAME BYTES|off' later) caps
        the bytes of objects an account holds; an upload that would pass it is refused with 507
        and a problem body before its bytes are taken. A device token may have at most
        --uploads-per-token upload requests in progress at once; one more gets 429 and
        Retry-After: 1. An address that sent --failed-auth-limit requests without a valid token
        (401) gets 429 with Retry-After for the next ones until its count has decayed (that many
        forgiven per --failed-auth-window seconds); its requests with a valid token are served as
        ever, so a good device behind the same NAT is not locked out.
        --token-file still works alongside or alone: its token is an admin token of the account
        'default', whose objects stay where they always were (DIR/objects); every other account's
        are under DIR/accounts/NAME/. Without --token-file and accounts.json every request is
        served, as before.
        """,
        options: [
            .option("dir", "DIR", "Where objects and upload state are stored (created if missing)."),
            .option("store", "s3://BUCKET/PREFIX", "Keep uploads, objects, sidecars and indexes in this bucket instead of --dir, so several instances serve one store (see above)."),
            .option("s3-endpoint", "URL", "With --store: an S3-compatible endpoint http(s)://host[:port] (path-style); default AWS."),
            .option("s3-region", "REGION", "With --store: the signing region (default $AWS_REGION, else us-east-1)."),
            .option("host", "ADDR", "Address to listen on.", default: "127.0.0.1"),
            .option("port", "N", "Port to listen on (0: any free port).", default: "8080"),
            .option("token-file", "PATH", "Require 'Authorization: Bearer <token>' with the token in this file."),
            .option("max-size", "BYTES", "Largest upload accepted (512M, 2G, ...).", default: "100G"),
            .option("partial-ttl", "SECONDS", "Abandoned partial uploads are removed after this long.", default: "86400"),
            .option("max-connections", "N", "Connections served at once.", default: "64"),
            .option("layout", "LAYOUT", "Where objects' bytes go: id (objects/<id>) or path (files/<library path>).", default: "id"),
            .option("sync", "MODE", "When partial uploads are fsynced: checkpoint or always (see above).", default: "checkpoint"),
            .option("checkpoint-interval", "SECONDS", "With --sync checkpoint: fsync a streaming upload at most this often.", default: "5"),
            .option("quota", "BYTES", "With 'accounts add' or 'accounts quota NAME BYTES': the most bytes of objects the account may hold (50G, 2T, ...)."),
            .option("uploads-per-token", "N", "Upload requests one device token may have in progress at once; more get 429.", default: "8"),
            .option("failed-auth-limit", "N", "Requests without a valid token one address may send in a burst; more get 429 until it slows.", default: "20"),
            .option("failed-auth-window", "SECONDS", "The time over which --failed-auth-limit failures are forgiven.", default: "60"),
            .option("scope", "SCOPE", "With 'tokens add': what the token may do: upload, read or admin (see above).", default: "upload"),
            .option("scrub-rate", "BYTES", "Hash stored objects again in the background at most this many bytes per second (512K, 8M, ...; 0 or off: no scrub).", default: "8M"),
        ],
        positionals: (0, 4),
        examples: [
            ("photodrain serve --dir /srv/photos", "listen on 127.0.0.1:8080"),
            ("photodrain serve --dir /srv/photos --layout path", "objects mirror the library's folders under /srv/photos/files"),
            ("photodrain serve --dir /srv/photos --host 0.0.0.0 --port 9000 --token-file /etc/photodrain/token", "on the network, with a token"),
            ("photodrain serve --dir /srv/photos accounts add anna", "an account for one family member"),
            ("photodrain serve --dir /srv/photos tokens add anna anna-phone > anna-phone.token", "an upload-only token for her phone"),
            ("photodrain serve --dir /srv/photos tokens revoke 3f09c2aa", "a lost laptop's token stops working within seconds"),
        ],
        exitCodes: [(0, "stopped by a signal, or the accounts/tokens action done"), (1, "could not start (port busy, directory unwritable), or an unknown account or token id"), (64, "usage error, or a --token-file that is unreadable, empty, or holds a space or control character")]
    )

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let store = arguments.string("store")
        guard let directory = arguments.string("dir") ?? store.map({ _ in Self.scratchDirectory() }) else {
            throw UsageError("--dir DIR (or --store s3://BUCKET/PREFIX) is required", command: spec.name)
        }
        if store != nil && arguments.string("dir") != nil {
            throw UsageError("--store keeps everything in the bucket (the account book too): give --store or --dir, not both", command: spec.name)
        }
        if !arguments.positionals.isEmpty {
            guard let store else { return try runAccounts(arguments, directory: directory) }
            return try runBucketAccounts(arguments, store: store, scratch: directory)
        }
        if store == nil && (arguments.string("s3-endpoint") != nil || arguments.string("s3-region") != nil) {
            throw UsageError("--s3-endpoint and --s3-region go with --store s3://BUCKET/PREFIX", command: spec.name)
        }
        if arguments.string("scope") != nil {
            throw UsageError("--scope goes with `serve tokens add ACCOUNT DEVICE`", command: spec.name)
        }
        if arguments.string("quota") != nil {
            throw UsageError("--quota goes with `serve accounts add NAME`", command: spec.name)
        }
        var configuration = ReceiverConfiguration(directory: directory)
        configuration.host = arguments.string("host") ?? "127.0.0.1"
        configuration.port = try arguments.int("port", default: 8080, range: 0...65535)
        configuration.maxSize = Int64(try arguments.bytes("max-size") ?? 107_374_182_400)
        configuration.partialTTL = try arguments.double("partial-ttl", default: 86_400, range: 1...31_536_000)
        configuration.maxConnections = try arguments.int("max-connections", default: 64, range: 1...10_000)
        let sync = arguments.string("sync") ?? ReceiverConfiguration.SyncMode.checkpoint.rawValue
        guard let syncMode = ReceiverConfiguration.SyncMode(rawValue: sync) else {
            throw UsageError("--sync wants checkpoint or always, not '\(sync)'", command: spec.name)
        }
        configuration.syncMode = syncMode
        let layout = arguments.string("layout") ?? ReceiverConfiguration.ObjectLayout.id.rawValue
        guard let objectLayout = ReceiverConfiguration.ObjectLayout(rawValue: layout) else {
            throw UsageError("--layout wants id or path, not '\(layout)'", command: spec.name)
        }
        configuration.layout = objectLayout
        configuration.checkpointInterval = try arguments.double("checkpoint-interval", default: 5, range: 0...86_400)
        configuration.uploadsPerToken = try arguments.int("uploads-per-token", default: 8, range: 1...10_000)
        configuration.failedAuthLimit = try arguments.int("failed-auth-limit", default: 20, range: 1...1_000_000)
        configuration.failedAuthWindow = try arguments.double("failed-auth-window", default: 60, range: 1...86_400)
        if let rate = arguments.string("scrub-rate") {
            guard rate.lowercased() == "off" || parseByteCount(rate) != nil else {
                throw UsageError("--scrub-rate wants a rate like 8M (bytes per second), or 0 or off, not '\(rate)'", command: spec.name)
            }
            configuration.scrubBytesPerSecond = Int64(parseByteCount(rate) ?? 0)
        }
        if let tokenFile = arguments.string("token-file") {
            // An unusable token file is refused before anything starts, as the clients refuse it.
            do {
                configuration.token = try ReceiverConfiguration.token(fromFile: tokenFile)
            } catch {
                throw UsageError(error.message, command: spec.name)
            }
        }
        if let store { configuration.s3Store = try Self.s3Store(store, arguments) }
        // Test-only and undocumented: makes two instances' completions of one content overlap.
        if let text = ProcessInfo.processInfo.environment["PHOTODRAIN_SERVE_S3_INDEX_PAUSE"], let seconds = Double(text), seconds > 0 {
            configuration.s3IndexPause = min(seconds, 10)
        }
        // Test-only and undocumented: the reliability matrix's stand-in for a full disk where it cannot
        // mount a small filesystem. Every body write after this many bytes fails as ENOSPC would.
        if let text = ProcessInfo.processInfo.environment["PHOTODRAIN_SERVE_DISK_FULL_AFTER"], let bytes = Int64(text), bytes >= 0 {
            configuration.faultInjection = FaultInjection(diskFullAfterBytes: bytes)
        }
        let server = ReceiverServer(configuration: configuration)
        let port = try server.start()
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        Console.shared.out("photodrain serve: uploads at http://\(host):\(port)/uploads, objects in \(store ?? directory)")
        let watcher = SignalWatcher { _ in server.stop() }
        // Block a thread of our own, never the cooperative pool.
        await onOwnThreadUntilDone("photodrain-serve") { _ = try? server.run() }
        watcher.cancel()
        if store != nil { try? FileManager.default.removeItem(atPath: directory) }
        return .success
    }

    /// The bucket of `--store`, with `--s3-endpoint`, `--s3-region` and the credentials the
    /// client takes (the environment, then `~/.aws/credentials`). Usage error when unusable.
    static func s3Store(_ url: String, _ arguments: ParsedArguments) throws(UsageError) -> S3Configuration {
        guard UploadDestinations.isS3(url) else {
            throw UsageError("--store wants s3://BUCKET/PREFIX, not '\(url)' (a directory goes in --dir)", command: spec.name)
        }
        let settings = UploadDestinations.Settings(s3Endpoint: arguments.string("s3-endpoint"), s3Region: arguments.string("s3-region"))
        do {
            let credentials = try S3Credentials.resolve(environment: settings.environment, home: settings.home)
            let configuration = try S3Configuration(destination: url, endpoint: settings.s3Endpoint, region: settings.resolvedRegion,
                                                    credentials: credentials)
            try configuration.validate()
            return configuration
        } catch {
            throw UsageError("--store: \(error.message)", command: spec.name)
        }
    }

    /// `serve --store … accounts|tokens …`: the same edits on the bucket's book, written back
    /// only if no other edit came first (then it says so and exits 1: run it again).
    static func runBucketAccounts(_ arguments: ParsedArguments, store: String, scratch: String) throws -> ExitCode {
        let configuration = try s3Store(store, arguments)
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var status = ExitCode.success
        let outcome = try S3AccountBook.edit(in: configuration, scratch: scratch) {
            status = try runAccounts(arguments, directory: scratch, shownRoot: store)
        }
        if case .conflict = outcome {
            Console.shared.err("photodrain serve: the bucket's account book changed during this edit; nothing was written: run it again")
            return .failure
        }
        return status
    }

    /// With `--store`: a directory of this process's own for what the receiver keeps
    /// beside the bucket (its empty directory store for requests that never reach the bucket).
    static func scratchDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("photodrain-serve-\(ProcessInfo.processInfo.processIdentifier)").path
    }
}
