import AssetStore
import Foundation
import Transfer
import UploadProtocol

/// The options every command that uploads shares: `--to`, `--token-file`, `--interop-version`,
/// and for `s3://` destinations `--s3-endpoint` and `--s3-region` (credentials come from the AWS
/// environment variables or ~/.aws/credentials, never from the command line).
enum TransferOptions {
    static let to = OptionSpec.option("to", "URL", "The destination: a photodrain serve URL, any resumable-upload server, or s3://BUCKET/PREFIX.")
    static let tokenFile = OptionSpec.option("token-file", "PATH", "Read a bearer token from this file; it is never printed.")
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
    static let all = [to, tokenFile, interopVersion, s3Endpoint, s3Region, acceptUnverified]

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

    /// The upload configuration from `--to`, `--token-file` and `--interop-version`.
    static func configuration(_ arguments: ParsedArguments) throws(UsageError) -> UploadConfiguration {
        guard let endpoint = arguments.string("to") else {
            throw UsageError("--to URL is required (or \"to\" in the configuration file)", command: arguments.command)
        }
        let version = try arguments.int("interop-version", default: ResumableUpload.defaultInteropVersion, range: 3...8)
        let configuration = UploadConfiguration(endpoint: endpoint, interopVersion: version, token: try token(arguments))
        do {
            try configuration.validate()
        } catch {
            throw UsageError("--to: \(error.message)", command: arguments.command)
        }
        return configuration
    }

    /// What building a destination needs besides its URL: the interop version, the token, and the
    /// S3 endpoint and region. Usage error for a bad number or token file.
    static func settings(_ arguments: ParsedArguments) throws(UsageError) -> UploadDestinations.Settings {
        let version = try arguments.int("interop-version", default: ResumableUpload.defaultInteropVersion, range: 3...8)
        return UploadDestinations.Settings(interopVersion: version, token: try token(arguments),
                                           s3Endpoint: arguments.string("s3-endpoint"), s3Region: arguments.string("s3-region"),
                                           acceptUnverified: arguments.flag("accept-unverified"))
    }

    /// Makes `url` the store's active destination (`AssetStore.useDestination`): usage error when
    /// it is another than the library's uploads went to and `--new-destination` is not given; a
    /// note on standard error when it switched.
    static func useDestination(_ url: String, store: AssetStore, arguments: ParsedArguments) throws -> AssetStore.DestinationUse {
        let use: AssetStore.DestinationUse
        do throws(StoreError) {
            use = try store.useDestination(url, allowChange: arguments.flag("new-destination"))
        } catch {
            guard error.code == .destinationChanged else { throw error }
            throw UsageError(error.message, command: arguments.command)
        }
        if let previous = use.previous {
            Console.shared.err("""
                photodrain \(arguments.command): uploading the library to \(AssetStore.destinationKey(url)) as well \
                (\(use.alreadyThere) photo\(use.alreadyThere == 1 ? "" : "s") already there); the uploads to \(previous) are kept
                """)
        }
        return use
    }

    /// The destination for a URL (`--to`, or a job's destination in the agent). Usage error when it
    /// is malformed, an S3 bucket without credentials, or given S3 options without being `s3://`.
    static func destination(for url: String, settings: UploadDestinations.Settings, command: String) throws(UsageError) -> any UploadDestination {
        if !UploadDestinations.isS3(url) && (settings.s3Endpoint != nil || settings.s3Region != nil) {
            throw UsageError("--s3-endpoint and --s3-region apply only to s3:// destinations", command: command)
        }
        do {
            return try UploadDestinations.make(for: url, settings: settings)
        } catch {
            throw UsageError("--to: \(error.message)", command: command)
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
