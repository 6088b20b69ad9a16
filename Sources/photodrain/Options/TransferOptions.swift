import AssetStore
import Foundation
import Transfer
import UploadProtocol

/// The options every command that uploads shares: `--to`, `--token-file`, `--ca-file`,
/// `--interop-version`, and for `s3://` destinations `--s3-endpoint` and `--s3-region` (credentials
/// come from the AWS environment variables or ~/.aws/credentials, never from the command line).
enum TransferOptions {
    static let to = OptionSpec.option("to", "URL", """
        The destination: a photodrain serve URL, any resumable-upload server, or s3://BUCKET/PREFIX. It must hold no \
        secret (no user:password@, no ?query, no #fragment; refused, exit 64): the store keeps it and status shows \
        it, so a token goes in --token-file. Scheme, host, port and path (for S3 the endpoint, bucket and prefix) \
        name the destination; another of any is another destination (--new-destination).
        """)
    static let tokenFile = OptionSpec.option("token-file", "PATH", "Read a bearer token from this file; it is never printed.")
    static let caFile = OptionSpec.option("ca-file", "PATH", "Verify an https destination's (or S3 endpoint's) certificate against the CA certificates in this PEM file, e.g. a home server's private CA.",
                                          default: "$SSL_CERT_FILE and $SSL_CERT_DIR, else the system's CAs")
    static let interopVersion = OptionSpec.option("interop-version", "N", "Resumable-upload interop version to speak (3-8).",
                                                  default: "\(ResumableUpload.defaultInteropVersion)")
    static let s3Endpoint = OptionSpec.option("s3-endpoint", "URL", "For s3:// destinations: an S3-compatible endpoint http(s)://host[:port] (path-style); default AWS.")
    static let s3Region = OptionSpec.option("s3-region", "REGION", "For s3:// destinations: the signing region (default $AWS_REGION, else us-east-1).")
    static let s3 = [s3Endpoint, s3Region]
    static let acceptUnverified = OptionSpec.flag("accept-unverified", """
        Upload to a server that cannot prove receipt (no resumable-upload protocol, so no digest of what it stored): its \
        2xx is taken as is and the photo is marked uploaded-unverified. Without it such a destination is refused.
        """)
    static let newDestination = OptionSpec.flag("new-destination", """
        --to names another destination than the one this library's uploads went to: upload the library there as well. \
        Each destination keeps its own uploads (status counts both); without it the run is refused (exit 64).
        """)
    static let bwlimit = OptionSpec.option("bwlimit", "RATE", """
        Upload at most this fast, all slots together: 2M (MiB/s), 512k (KiB/s), a bare number (KiB/s), off; or a \
        timetable of HH:MM,RATE entries, e.g. "08:00,512k 23:00,off" (local time).
        """, default: "off")
    static let all = [to, tokenFile, caFile, interopVersion, s3Endpoint, s3Region, acceptUnverified, bwlimit]

    /// Reads the token file: its first line, trimmed. Usage error when unreadable or malformed.
    static func token(_ arguments: ParsedArguments) throws(UsageError) -> BearerToken? {
        guard let path = arguments.string("token-file") else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read the token file \(path)", command: arguments.command)
        }
        guard let token = BearerToken(String(decoding: data, as: UTF8.self)) else {
            throw UsageError("the token file \(path) is empty or holds spaces or control characters", command: arguments.command)
        }
        return token
    }

    /// The certificate authorities from `--ca-file`, else `$SSL_CERT_FILE` and `$SSL_CERT_DIR`,
    /// else the system's. Usage error naming the path when the file is missing, unreadable, or
    /// holds no PEM certificate (libcurl would refuse it only once an upload had started).
    static func trust(_ arguments: ParsedArguments) throws(UsageError) -> TrustedAuthorities {
        guard let path = arguments.string("ca-file") else { return .fromEnvironment(ProcessInfo.processInfo.environment) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw UsageError("the CA file \(path) does not exist", command: arguments.command)
        }
        guard !isDirectory.boolValue else {
            throw UsageError("the CA file \(path) is a directory; pass the PEM file of the CA's certificate", command: arguments.command)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read the CA file \(path)", command: arguments.command)
        }
        guard String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw UsageError("the CA file \(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----)", command: arguments.command)
        }
        return TrustedAuthorities(file: path)
    }

    /// What `command` prints when the destination refused an upload (`refusal` is the failure's
    /// `code: message`): what happened and how to fix it. `caFileOf` names the command that takes
    /// `--ca-file`, when it is another one (`wake` reports what the agent met).
    static func refusalMessage(_ refusal: String, command: String, caFileOf owner: String? = nil) -> String {
        let uncharged = "No photo was charged an attempt."
        let tls = TransferError.Code.tlsFailure.rawValue + ": "
        let corrupted = TransferError.Code.corruptedInTransit.rawValue + ": "
        if refusal.hasPrefix(corrupted) {
            return "photodrain \(command): the bytes changed on the way to the destination, every time they were sent "
                + "(\(refusal)). Nothing was marked uploaded; a proxy, filter or faulty network link between here and the "
                + "destination is the likely cause. \(uncharged)"
        }
        guard refusal.hasPrefix(tls) else {
            // A wrong token or URL gets the options to check; other refusals' messages say the fix.
            let code = String(refusal.prefix { $0 != ":" })
            var advice = ""
            if code == TransferError.Code.unauthorized.rawValue || code == TransferError.Code.notFound.rawValue {
                // wake names the destination; the token is the agent's, which sends the bytes.
                advice = owner.map { " Check --to, and the --token-file given to `photodrain \($0)`." } ?? " Check --to and --token-file."
            }
            return "photodrain \(command): the destination refused the upload (\(refusal)).\(advice) \(uncharged)"
        }
        if refusal.contains("is it http://?") {
            return "photodrain \(command): \(refusal.dropFirst(tls.count)) Check the scheme in --to. \(uncharged)"
        }
        return "photodrain \(command): \(refusal.dropFirst(tls.count)): \(certificateAdvice(caFileOf: owner)). \(uncharged)"
    }

    /// How to fix a certificate that failed verification.
    static func certificateAdvice(caFileOf owner: String? = nil) -> String {
        let option = "--ca-file PATH" + (owner.map { " to `photodrain \($0)`" } ?? "")
        return "pass \(option) with the certificate of the CA that signed the server's certificate, or fix the server's certificate"
    }

    /// The upload configuration from `--to`, `--token-file`, `--ca-file` and `--interop-version`.
    static func configuration(_ arguments: ParsedArguments) throws(UsageError) -> UploadConfiguration {
        guard let endpoint = arguments.string("to") else {
            throw UsageError("--to URL is required (or \"to\" in the configuration file)", command: arguments.command)
        }
        let version = try arguments.int("interop-version", default: ResumableUpload.defaultInteropVersion, range: 3...8)
        var configuration = UploadConfiguration(endpoint: endpoint, interopVersion: version, token: try token(arguments))
        configuration.http.trust = try trust(arguments)
        do {
            try configuration.validate()
        } catch {
            throw UsageError("--to: \(error.message)", command: arguments.command)
        }
        return configuration
    }

    /// What building a destination needs besides its URL: the interop version, the token, the
    /// trusted CAs, and the S3 endpoint and region. Usage error for a bad number, token or CA file.
    static func settings(_ arguments: ParsedArguments) throws(UsageError) -> UploadDestinations.Settings {
        let version = try arguments.int("interop-version", default: ResumableUpload.defaultInteropVersion, range: 3...8)
        return UploadDestinations.Settings(interopVersion: version, token: try token(arguments),
                                           s3Endpoint: arguments.string("s3-endpoint"), s3Region: arguments.string("s3-region"),
                                           acceptUnverified: arguments.flag("accept-unverified"), trust: try trust(arguments),
                                           bandwidth: try bandwidth(arguments))
    }

    /// The shared upload budget from `--bwlimit` (nil without it, or `off`); usage error for a bad rate.
    static func bandwidth(_ arguments: ParsedArguments) throws(UsageError) -> BandwidthLimit? {
        guard let text = arguments.string("bwlimit") else { return nil }
        do {
            let limit = try BandwidthLimit(parsing: text)
            return limit.entries.allSatisfy({ $0.bytesPerSecond == nil }) ? nil : limit
        } catch {
            throw UsageError(error.message, command: arguments.command)
        }
    }

    /// Makes `identity` the store's active destination (`AssetStore.useDestination`; `url` is the
    /// `--to` it came from, the form an earlier PhotoDrain recorded an S3 destination in): usage
    /// error when it is another than the library's uploads went to and `--new-destination` is not
    /// given; a note on standard error when it switched.
    static func useDestination(_ identity: DestinationIdentity, url: String, store: AssetStore,
                               arguments: ParsedArguments) throws -> AssetStore.DestinationUse {
        let use: AssetStore.DestinationUse
        do throws(StoreError) {
            use = try store.useDestination(identity.key, formerly: url, allowChange: arguments.flag("new-destination"))
        } catch {
            guard error.code == .destinationChanged else { throw error }
            throw UsageError(error.message, command: arguments.command)
        }
        if let previous = use.previous {
            Console.shared.err("""
                photodrain \(arguments.command): uploading the library to \(identity) as well \
                (\(use.alreadyThere) photo\(use.alreadyThere == 1 ? "" : "s") already there); the uploads to \(previous) are kept
                """)
        }
        return use
    }

    /// The destination a command that checks or fetches what was uploaded talks to (`verify`,
    /// `free-space`, `restore`): `--to` when given, else the destination as the store named it
    /// (`recorded`: its URL, and for S3 the endpoint or AWS region the uploads went to, where the
    /// options name none). Nil when neither exists. Returns the URL it was built from too.
    static func recordedDestination(_ recorded: String?, _ arguments: ParsedArguments, command: String) throws -> (destination: any UploadDestination, url: String)? {
        var settings = try settings(arguments)
        let url: String
        if let given = arguments.string("to") {
            url = given
        } else if let recorded {
            let parts = DestinationIdentity.parts(of: recorded)
            url = parts.url
            settings.s3Endpoint = settings.s3Endpoint ?? parts.s3Endpoint
            settings.s3Region = settings.s3Region ?? parts.s3Region
        } else {
            return nil
        }
        return (try destination(for: url, settings: settings, command: command), url)
    }

    /// The destination for a URL (`--to`, or a job's destination in the agent). Usage error when it
    /// is malformed, an S3 bucket without credentials, or given S3 options without being `s3://`.
    static func destination(for url: String, settings: UploadDestinations.Settings, command: String) throws(UsageError) -> any UploadDestination {
        try checkURL(url, settings: settings, command: command)
        do {
            return try UploadDestinations.make(for: url, settings: settings)
        } catch {
            throw UsageError("--to: \(error.message)", command: command)
        }
    }

    /// Where `url` with `settings` sends bytes (`DestinationIdentity`), without building the
    /// destination (`wake` names it for the agent, which holds the token and S3 credentials).
    /// Usage error as `destination(for:settings:command:)`.
    static func identity(for url: String, settings: UploadDestinations.Settings, command: String) throws(UsageError) -> DestinationIdentity {
        try checkURL(url, settings: settings, command: command)
        do {
            return try DestinationIdentity(url: url, settings: settings)
        } catch {
            throw UsageError("--to: \(error.message)", command: command)
        }
    }

    /// Refuses a `--to` that holds a secret, and S3 options for a destination that is not S3.
    ///
    /// The rule: a destination URL never holds a secret. The store keeps it (its uploads are
    /// recorded against it), `status`, `verify` and their JSON print it, and upload jobs carry it
    /// to the agent, so user info, a query or a fragment in it would be copied everywhere. They
    /// are refused rather than dropped, so what is sent is what is named: a bearer token goes in
    /// `--token-file` (or `token-file` in the configuration file), S3 keys in the AWS environment.
    static func checkURL(_ url: String, settings: UploadDestinations.Settings, command: String) throws(UsageError) {
        if let part = DestinationIdentity.secretPart(of: url) {
            throw UsageError("""
                --to holds a \(part), which PhotoDrain would keep in its store and print: a destination URL holds no \
                secret. Put the token in a file and pass --token-file PATH (or token-file in the configuration file), \
                and give --to as scheme://host[:port]/path
                """, command: command)
        }
        if !UploadDestinations.isS3(url) && (settings.s3Endpoint != nil || settings.s3Region != nil) {
            throw UsageError("--s3-endpoint and --s3-region apply only to s3:// destinations", command: command)
        }
    }

    /// The destination from `--to` and the options above.
    static func destination(_ arguments: ParsedArguments) throws(UsageError) -> any UploadDestination {
        guard let url = arguments.string("to") else {
            throw UsageError("--to URL is required (or \"to\" in the configuration file)", command: arguments.command)
        }
        return try destination(for: url, settings: try settings(arguments), command: arguments.command)
    }
}
