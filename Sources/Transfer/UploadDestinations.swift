import Foundation

/// Chooses and builds the destination for a `--to` URL: `http(s)://…` is a resumable-upload
/// server (`ResumableUploader`), `s3://BUCKET/PREFIX` an S3 bucket (`S3Uploader`).
public enum UploadDestinations {
    /// Everything a destination may need besides its URL.
    public struct Settings: Sendable {
        /// The resumable-upload interop version (HTTP destinations).
        public var interopVersion: Int
        /// The bearer token (HTTP destinations).
        public var token: BearerToken?
        /// The S3 endpoint (`http(s)://host[:port]`, path-style); nil for AWS itself.
        public var s3Endpoint: String?
        /// The S3 region; nil to take `AWS_REGION`, then `AWS_DEFAULT_REGION`, then `us-east-1`.
        public var s3Region: String?
        /// The S3 credentials; nil to resolve them from `environment` (`S3Credentials.resolve`).
        public var s3Credentials: S3Credentials?
        /// The environment to read AWS variables from.
        public var environment: [String: String]
        /// The home directory for `~/.aws/credentials`.
        public var home: String?
        /// Whether HTTP destinations ask the receiver for the content by digest before sending
        /// (`UploadConfiguration.hashPreCheck`).
        public var hashPreCheck: Bool
        /// Whether destinations that cannot prove receipt may take uploads, marked unverified
        /// (`UploadConfiguration.acceptUnverified`, `S3Configuration.acceptUnverified`).
        public var acceptUnverified: Bool
        /// The certificate authorities an https destination (or S3 endpoint) is verified against.
        public var trust: TrustedAuthorities
        /// The upload budget every transfer to the destination shares (`--bwlimit`); nil for none.
        public var bandwidth: BandwidthLimit?

        /// Settings with the process environment and home directory; `trust` nil takes
        /// `$SSL_CERT_FILE` and `$SSL_CERT_DIR` from `environment`, else the system's authorities.
        public init(interopVersion: Int = 6, token: BearerToken? = nil, s3Endpoint: String? = nil, s3Region: String? = nil,
                    s3Credentials: S3Credentials? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
                    home: String? = ProcessInfo.processInfo.environment["HOME"], hashPreCheck: Bool = true,
                    acceptUnverified: Bool = false, trust: TrustedAuthorities? = nil, bandwidth: BandwidthLimit? = nil) {
            self.interopVersion = interopVersion
            self.token = token
            self.s3Endpoint = s3Endpoint
            self.s3Region = s3Region
            self.s3Credentials = s3Credentials
            self.environment = environment
            self.home = home
            self.hashPreCheck = hashPreCheck
            self.acceptUnverified = acceptUnverified
            self.trust = trust ?? .fromEnvironment(environment)
            self.bandwidth = bandwidth
        }

        /// The region S3 requests are signed for.
        public var resolvedRegion: String {
            for candidate in [s3Region, environment["AWS_REGION"], environment["AWS_DEFAULT_REGION"]] {
                if let candidate, !candidate.isEmpty { return candidate }
            }
            return "us-east-1"
        }
    }

    /// True for an `s3://` URL.
    public static func isS3(_ url: String) -> Bool { url.lowercased().hasPrefix("s3://") }

    /// The destination for `url`, checked. Throws `TransferError` (`invalid-request`) for an
    /// unknown scheme, a malformed URL, or an S3 bucket without credentials.
    public static func make(for url: String, settings: Settings = Settings()) throws(TransferError) -> any UploadDestination {
        if isS3(url) {
            let credentials: S3Credentials
            if let given = settings.s3Credentials {
                credentials = given
            } else {
                credentials = try S3Credentials.resolve(environment: settings.environment, home: settings.home)
            }
            var configuration = try S3Configuration(destination: url, endpoint: settings.s3Endpoint,
                                                    region: settings.resolvedRegion, credentials: credentials)
            configuration.http.trust = settings.trust
            configuration.http.bandwidth = settings.bandwidth
            configuration.acceptUnverified = settings.acceptUnverified
            try configuration.validate()
            return S3Uploader(configuration: configuration)
        }
        var configuration = UploadConfiguration(endpoint: url, interopVersion: settings.interopVersion, token: settings.token,
                                                hashPreCheck: settings.hashPreCheck, acceptUnverified: settings.acceptUnverified)
        configuration.http.trust = settings.trust
        configuration.http.bandwidth = settings.bandwidth
        try configuration.validate()
        return ResumableUploader(configuration: configuration)
    }
}
