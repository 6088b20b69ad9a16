/// Where a destination's bytes go, as one string: what the store keeps uploads against
/// (`AssetStore.useDestination`, `uploads.destination`), what upload jobs name, and what `status`
/// and `verify` show. Another scheme, host, port or path is another destination; for S3, another
/// endpoint, bucket or prefix (on AWS itself the endpoint is the region's, so another region is
/// another destination; with `--s3-endpoint` the region only signs, and is left out).
///
/// - HTTP: `scheme://host[:port]/path`, scheme and host lowercased, the path's case kept, no
///   trailing `/` (`HTTP://Photos.Example:8080/Uploads/` is `http://photos.example:8080/Uploads`).
/// - S3: `s3://BUCKET[/PREFIX] at ORIGIN`, the endpoint's origin:
///   `s3://photos/c at http://127.0.0.1:9000`, or on AWS `s3://photos/c at https://s3.eu-west-1.amazonaws.com`.
///
/// It never holds a secret: user info, query and fragment are left out (and `--to` refuses them,
/// so what is sent is what is named), and S3 credentials are never part of a destination.
public struct DestinationIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The identity as the store keeps and compares it (and people read it).
    public let key: String

    public var description: String { key }

    /// The identity of an HTTP(S) destination URL (user info, query and fragment dropped).
    public init(url: String) {
        key = Self.withoutSecrets(url)
    }

    /// The identity of an S3 destination: bucket, prefix and the endpoint's origin.
    public init(s3 configuration: S3Configuration) {
        let place = configuration.prefix.isEmpty ? "s3://\(configuration.bucket)" : "s3://\(configuration.bucket)/\(configuration.prefix)"
        key = "\(place)\(Self.s3Separator)\(configuration.endpoint)"
    }

    /// The identity of the destination `url` names with `settings` (the S3 endpoint and region),
    /// without building it: S3 credentials are no part of where bytes go, and need not be at
    /// hand (`wake` names the destination; the agent, which sends, holds them). Throws
    /// `TransferError` (`invalid-request`) for a malformed S3 URL, bucket, endpoint or region.
    public init(url: String, settings: UploadDestinations.Settings) throws(TransferError) {
        guard UploadDestinations.isS3(url) else {
            self.init(url: url)
            return
        }
        // Read for its endpoint only; these credentials never sign anything.
        guard let unused = S3Credentials(accessKeyID: "identity", secretAccessKey: "identity") else {
            throw TransferError(.invalidRequest, "no placeholder credentials")
        }
        self.init(s3: try S3Configuration(destination: url, endpoint: settings.s3Endpoint, region: settings.resolvedRegion,
                                          credentials: unused))
    }

    /// Between an S3 identity's bucket and prefix and its endpoint.
    static let s3Separator = " at "

    /// An identity read back (from the store or a job): the URL `--to` takes, and for S3 the
    /// endpoint (`--s3-endpoint`) and region (`--s3-region`) that lead to the same place; an AWS
    /// endpoint gives its region, any other endpoint itself. An identity from before endpoints were
    /// part of it (a bare `s3://BUCKET/PREFIX`) gives neither: the runner's own options decide.
    public struct Parts: Sendable, Equatable {
        public var url: String
        public var s3Endpoint: String?
        public var s3Region: String?

        public init(url: String, s3Endpoint: String? = nil, s3Region: String? = nil) {
            self.url = url
            self.s3Endpoint = s3Endpoint
            self.s3Region = s3Region
        }
    }

    /// What `key` names (see `Parts`).
    public static func parts(of key: String) -> Parts {
        guard UploadDestinations.isS3(key), let separator = key.range(of: s3Separator, options: .backwards) else {
            return Parts(url: key)
        }
        let origin = String(key[separator.upperBound...])
        let url = String(key[..<separator.lowerBound])
        let awsHost = origin.hasPrefix("https://s3.") && origin.hasSuffix(".amazonaws.com")
        if awsHost {
            let region = origin.dropFirst("https://s3.".count).dropLast(".amazonaws.com".count)
            if !region.isEmpty, !region.contains(".") { return Parts(url: url, s3Region: String(region)) }
        }
        return Parts(url: url, s3Endpoint: origin)
    }

    /// True when `key` is an S3 identity from before the endpoint was part of it: `s3://BUCKET/PREFIX`.
    public static func isBareS3(_ key: String) -> Bool {
        UploadDestinations.isS3(key) && !key.contains(s3Separator)
    }

    /// What in `url` could hold a secret, named for a message (`user info`, `query`, `fragment`);
    /// nil when it holds none. `--to` refuses such a URL: a token goes in `--token-file` or the
    /// configuration file's `token-file`, never in the URL, which the store keeps and output shows.
    public static func secretPart(of url: String) -> String? {
        if let authority = authority(of: url), authority.contains("@") { return "user info (user:password@)" }
        if url.contains("?") { return "query (?…)" }
        if url.contains("#") { return "fragment (#…)" }
        return nil
    }

    /// `url` without user info, query or fragment, without a trailing `/`, its scheme and host
    /// lowercased and its path as it is. `AssetStore.destinationKey` is the store's copy of this
    /// rule (the store imports no Transfer); `DestinationIdentityTests` keeps the two equal.
    static func withoutSecrets(_ url: String) -> String {
        var text = Substring(url.trimmingCharacters(in: .whitespaces))
        if let cut = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<cut] }
        while text.hasSuffix("/") && !text.hasSuffix("://") { text.removeLast() }
        guard let schemeEnd = text.range(of: "://") else { return String(text) }
        let afterScheme = text[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        var authority = afterScheme[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        return (text[..<schemeEnd.upperBound] + authority).lowercased() + text[authorityEnd...]
    }

    /// The authority of an absolute URL (between `://` and the next `/`, `?` or `#`); nil without `://`.
    private static func authority(of url: String) -> Substring? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        let afterScheme = url[schemeEnd.upperBound...]
        return afterScheme[..<(afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex)]
    }
}

extension UploadDestination {
    /// Where this destination's bytes go (see `DestinationIdentity`): by default, the identity of
    /// its `endpoint` URL. `S3Uploader` adds its endpoint.
    public var identity: DestinationIdentity { DestinationIdentity(url: endpoint) }
}
