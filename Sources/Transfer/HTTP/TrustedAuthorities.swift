/// The certificate authorities an https destination's certificate is verified against.
///
/// libcurl itself reads neither `SSL_CERT_FILE` nor `SSL_CERT_DIR` (only the `curl` tool does), so
/// a home server signed by a private CA could not be trusted at all. `file` becomes libcurl's
/// `CURLOPT_CAINFO`, `directory` its `CURLOPT_CAPATH`; nil leaves libcurl's built-in default (the
/// system's bundle). Verification itself is never turned off.
public struct TrustedAuthorities: Sendable, Equatable {
    /// A PEM file of CA certificates (`--ca-file`, or `$SSL_CERT_FILE`).
    public var file: String?
    /// A directory of hashed CA certificates, as `c_rehash` makes them (`$SSL_CERT_DIR`).
    public var directory: String?

    /// Trusts `file` and `directory`; with neither, the system's authorities.
    public init(file: String? = nil, directory: String? = nil) {
        self.file = file
        self.directory = directory
    }

    /// The system's authorities, as libcurl was built to find them.
    public static let system = TrustedAuthorities()

    /// `$SSL_CERT_FILE` and `$SSL_CERT_DIR` when set (and not empty), as OpenSSL's own tools
    /// honour them; otherwise the system's.
    public static func fromEnvironment(_ environment: [String: String]) -> TrustedAuthorities {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        return TrustedAuthorities(file: value("SSL_CERT_FILE"), directory: value("SSL_CERT_DIR"))
    }
}
