import UploadProtocol

/// Where and how `ResumableUploader` uploads.
public struct UploadConfiguration: Sendable {
    /// The upload endpoint: resumable creations and plain uploads are sent here.
    public var endpoint: String
    /// The resumable-upload interop version sent on every request (3...8).
    public var interopVersion: Int
    /// The bearer token, when the server requires one.
    public var token: BearerToken?
    /// Files up to this size are sent whole in the creation request (the 104 carries the upload
    /// URL); larger files are created empty first so no byte leaves without a saved upload URL.
    public var optimisticCreationLimit: Int64
    /// How long a discovery answer is reused for the same origin.
    public var discoveryLifetime: Duration
    /// How many times one `upload` call recovers from a transient failure (via HEAD) before it
    /// gives up and throws, leaving the checkpoint for a later retry.
    public var maxResumesPerUpload: Int
    /// The pause before each such recovery, multiplied by the attempt number.
    public var resumeBackoff: Duration
    /// The method of a plain (non-resumable) upload: `POST` or `PUT`.
    public var plainUploadMethod: String
    /// Timeouts, limits and trusted certificate authorities of the underlying HTTP client.
    public var http: HTTPClient.Options
    /// Whether an upload whose SHA-256 is known first asks the receiver for an object with that
    /// content (`HEAD <base>/objects/by-digest/<sha256>`) and, when it has one, sends no bytes.
    /// Any answer but a 200 naming the object (404, 405, 501, an error) means a normal upload.
    public var hashPreCheck: Bool
    /// Whether a destination that cannot prove receipt (a server without the resumable protocol,
    /// taking a plain upload) may be used at all; its uploads are then `ReceiptProof.unverified`.
    /// Off by default: a 2xx from such a server proves nothing (any web server, a captive portal).
    public var acceptUnverified: Bool

    /// Creates a configuration with the defaults: interop 6, 4 MiB optimistic limit, discovery
    /// kept 5 minutes, 5 resumes per call with a 250 ms backoff step, plain uploads by POST.
    public init(endpoint: String, interopVersion: Int = ResumableUpload.defaultInteropVersion,
                token: BearerToken? = nil, optimisticCreationLimit: Int64 = 4 * 1024 * 1024,
                discoveryLifetime: Duration = .seconds(300), maxResumesPerUpload: Int = 5,
                resumeBackoff: Duration = .milliseconds(250), plainUploadMethod: String = "POST",
                http: HTTPClient.Options = HTTPClient.Options(), hashPreCheck: Bool = false,
                acceptUnverified: Bool = false) {
        self.endpoint = endpoint
        self.interopVersion = interopVersion
        self.token = token
        self.optimisticCreationLimit = optimisticCreationLimit
        self.discoveryLifetime = discoveryLifetime
        self.maxResumesPerUpload = maxResumesPerUpload
        self.resumeBackoff = resumeBackoff
        self.plainUploadMethod = plainUploadMethod
        self.http = http
        self.hashPreCheck = hashPreCheck
        self.acceptUnverified = acceptUnverified
    }

    /// Checks the values an upload depends on. Throws `TransferError` (`invalid-request`).
    public func validate() throws(TransferError) {
        guard ResumableUpload.supportedInteropVersions.contains(interopVersion) else {
            throw TransferError(.invalidRequest, "interop version \(interopVersion) is not in 3...8")
        }
        if endpoint.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
            throw TransferError(.invalidRequest, "the destination URL holds a space or a control character; percent-encode it (a space is %20)")
        }
        guard UploadEndpoint.origin(of: endpoint) != nil else {
            throw TransferError(.invalidRequest, "the destination is not an absolute http(s) URL")
        }
        guard plainUploadMethod == "POST" || plainUploadMethod == "PUT" else {
            throw TransferError(.invalidRequest, "plain uploads use POST or PUT")
        }
    }
}
