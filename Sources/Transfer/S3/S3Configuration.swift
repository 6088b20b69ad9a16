import Foundation

/// Where and how `S3Uploader` uploads: the bucket and key prefix from `s3://BUCKET/PREFIX`, the
/// endpoint, region and credentials, and the multipart tuning.
public struct S3Configuration: Sendable {
    /// How object URLs name the bucket.
    public enum Addressing: String, Sendable {
        /// `http://endpoint/BUCKET/KEY`: MinIO, Ceph, R2, moto and any `--s3-endpoint`.
        case path
        /// `https://BUCKET.s3.REGION.amazonaws.com/KEY`: AWS itself.
        case virtualHosted
    }

    /// S3's smallest part (every part but the last).
    public static let minimumPartSize: Int64 = 5 * 1024 * 1024
    /// S3's largest part number.
    public static let maximumPartCount = 10_000

    /// The destination as given, `s3://BUCKET/PREFIX`.
    public var destination: String
    /// The bucket.
    public var bucket: String
    /// The key prefix without leading or trailing `/` (may be empty).
    public var prefix: String
    /// The endpoint's origin, `http(s)://host[:port]`.
    public var endpoint: String
    /// Path-style or virtual-hosted URLs.
    public var addressing: Addressing
    /// The signing region.
    public var region: String
    /// The key pair.
    public var credentials: S3Credentials
    /// Files larger than this go by multipart upload; smaller ones by one PUT.
    public var multipartThreshold: Int64
    /// The size of every part but the last (raised when a file would need more than 10,000 parts).
    public var partSize: Int64
    /// How many transient failures one `upload` call recovers from (re-checking with ListParts)
    /// before it throws, leaving the checkpoint for a later retry.
    public var maxRetriesPerUpload: Int
    /// The pause before each such recovery, multiplied by the attempt number.
    public var retryBackoff: Duration
    /// Timeouts, limits and trusted certificate authorities of the underlying HTTP client.
    public var http: HTTPClient.Options
    /// Whether an upload the store gives no figure of its own for (an ETag that is not an MD5 and
    /// no SHA-256 checksum) is taken, marked `uploaded-unverified`; otherwise it fails.
    public var acceptUnverified = false

    /// Parses `s3://BUCKET/PREFIX`. Without `endpoint` the AWS endpoint of `region` is used
    /// (virtual-hosted unless the bucket name has dots); with one (`http(s)://host[:port]`), path
    /// style. Throws `TransferError` (`invalid-request`) for a malformed URL, bucket or endpoint.
    public init(destination: String, endpoint: String? = nil, region: String = "us-east-1", credentials: S3Credentials,
                multipartThreshold: Int64 = 16 * 1024 * 1024, partSize: Int64 = 8 * 1024 * 1024,
                maxRetriesPerUpload: Int = 5, retryBackoff: Duration = .milliseconds(250),
                http: HTTPClient.Options = HTTPClient.Options(maxBodyBytes: 1024 * 1024)) throws(TransferError) {
        guard destination.hasPrefix("s3://") else {
            throw TransferError(.invalidRequest, "an S3 destination looks like s3://BUCKET/PREFIX")
        }
        let rest = destination.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        let prefix = rest.dropFirst(bucket.count).split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        guard Self.isValidBucket(bucket) else {
            throw TransferError(.invalidRequest, "the bucket name must be 3-63 lower-case letters, digits, dots or hyphens")
        }
        guard !region.isEmpty, region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw TransferError(.invalidRequest, "the S3 region must be letters, digits and hyphens, e.g. us-east-1")
        }
        if let endpoint {
            guard let origin = UploadEndpoint.origin(of: endpoint),
                  let url = URL(string: endpoint), url.path.isEmpty || url.path == "/", url.query == nil else {
                throw TransferError(.invalidRequest, "--s3-endpoint must be an http(s)://host[:port] URL without a path")
            }
            self.endpoint = origin
            self.addressing = .path
        } else if bucket.contains(".") {
            self.endpoint = "https://s3.\(region).amazonaws.com"
            self.addressing = .path
        } else {
            self.endpoint = "https://s3.\(region).amazonaws.com"
            self.addressing = .virtualHosted
        }
        self.destination = destination
        self.bucket = bucket
        self.prefix = prefix
        self.region = region
        self.credentials = credentials
        self.multipartThreshold = multipartThreshold
        self.partSize = partSize
        self.maxRetriesPerUpload = maxRetriesPerUpload
        self.retryBackoff = retryBackoff
        self.http = http
    }

    /// Checks the tuning. Throws `TransferError` (`invalid-request`).
    public func validate() throws(TransferError) {
        guard partSize >= Self.minimumPartSize, partSize <= 5 * 1024 * 1024 * 1024 else {
            throw TransferError(.invalidRequest, "the S3 part size must be between 5 MiB and 5 GiB")
        }
        guard multipartThreshold >= 0, maxRetriesPerUpload >= 0 else {
            throw TransferError(.invalidRequest, "the multipart threshold and retry count must not be negative")
        }
    }

    /// The object key for a photo: `PREFIX/<sha256>-<name>` (no prefix: `<sha256>-<name>`), so the
    /// same photo always lands on the same key and a re-upload overwrites instead of duplicating.
    /// The name keeps letters, digits, `.`, `-`, `_` and `~` and turns every other character into
    /// `_`, so keys never need percent-encoding (S3-compatible servers disagree on how to sign
    /// encoded paths); the exact name travels in `x-amz-meta-filename`.
    public func objectKey(for metadata: UploadMetadata) -> String {
        var name = ""
        for scalar in metadata.filename.unicodeScalars {
            let keep = scalar.isASCII && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                || ("0"..."9").contains(scalar) || scalar == "." || scalar == "-" || scalar == "_" || scalar == "~")
            name.unicodeScalars.append(keep ? scalar : "_")
        }
        let leaf = metadata.sha256Hex.lowercased() + "-" + name
        return prefix.isEmpty ? leaf : prefix + "/" + leaf
    }

    /// The `s3://BUCKET/KEY` URI of an object (a checkpoint's location).
    public func objectURI(key: String) -> String { "s3://\(bucket)/\(key)" }

    /// The key of an `s3://BUCKET/KEY` URI in this bucket; nil for another bucket or a malformed URI.
    public func key(fromObjectURI uri: String) -> String? {
        let head = "s3://\(bucket)/"
        guard uri.hasPrefix(head), uri.count > head.count else { return nil }
        return String(uri.dropFirst(head.count))
    }

    /// The request target for an object (or the bucket, when `key` is nil): the `Host` value, the
    /// URI-encoded path to sign, and the full URL with `query` in canonical order.
    func target(key: String?, query: [(name: String, value: String)]) -> (url: String, host: String, path: String) {
        let encodedKey = key.map { SigV4Signer.uriEncode($0, keepSlash: true) }
        var origin = endpoint
        let path: String
        switch addressing {
        case .path:
            path = "/" + SigV4Signer.uriEncode(bucket) + (encodedKey.map { "/" + $0 } ?? "")
        case .virtualHosted:
            origin = endpoint.replacingOccurrences(of: "://", with: "://\(bucket).")
            path = "/" + (encodedKey ?? "")
        }
        let host = origin.split(separator: "/").dropFirst().first.map(String.init) ?? ""
        // The URL carries the same sorted, encoded pairs as the canonical query, but a name with an
        // empty value goes bare (`?uploads`), as S3 documents it.
        let queryText = SigV4Signer.encodedPairs(query).map { (pair: (name: String, value: String)) -> String in
            pair.value.isEmpty ? pair.name : pair.name + "=" + pair.value
        }.joined(separator: "&")
        return (origin + path + (queryText.isEmpty ? "" : "?" + queryText), host, path)
    }

    static func isValidBucket(_ name: String) -> Bool {
        guard (3...63).contains(name.count), let first = name.first, let last = name.last,
              first.isLetter || first.isNumber, last.isLetter || last.isNumber else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "." || $0 == "-") }
    }
}
