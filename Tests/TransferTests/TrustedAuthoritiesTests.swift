import Foundation
import Testing
@testable import Transfer

/// Which CAs verify an https destination. libcurl reads neither `SSL_CERT_FILE`
/// nor `SSL_CERT_DIR`, so the client takes them from the environment itself, and `--ca-file`
/// (`Settings.trust`) reaches the HTTP client of either kind of destination, S3 included.
@Suite struct TrustedAuthoritiesTests {
    @Test(arguments: [
        ([:], TrustedAuthorities.system),
        (["SSL_CERT_FILE": "/etc/home-ca.pem"], TrustedAuthorities(file: "/etc/home-ca.pem")),
        (["SSL_CERT_DIR": "/etc/home-certs"], TrustedAuthorities(directory: "/etc/home-certs")),
        (["SSL_CERT_FILE": "/a.pem", "SSL_CERT_DIR": "/certs"], TrustedAuthorities(file: "/a.pem", directory: "/certs")),
        (["SSL_CERT_FILE": "", "SSL_CERT_DIR": ""], TrustedAuthorities.system),
    ] as [([String: String], TrustedAuthorities)])
    func theEnvironmentNamesTheAuthorities(environment: [String: String], expected: TrustedAuthorities) {
        #expect(TrustedAuthorities.fromEnvironment(environment) == expected)
    }

    static let credentials = S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret")

    /// The trust given in the settings, else the settings' environment's, is the one the
    /// destination's HTTP client verifies with: for a resumable-upload server and for S3.
    @Test(arguments: ["https://photos.example/uploads", "s3://photos/library"])
    func settingsTrustReachesTheDestinationsClient(url: String) throws {
        let environment = ["SSL_CERT_FILE": "/env/ca.pem"]
        let given = TrustedAuthorities(file: "/home/me/home-ca.pem")
        for (trust, expected) in [(given, given), (nil, TrustedAuthorities(file: "/env/ca.pem"))] {
            let settings = UploadDestinations.Settings(s3Endpoint: url.hasPrefix("s3:") ? "https://s3.home.example:9000" : nil,
                                                       s3Credentials: Self.credentials, environment: environment, trust: trust)
            let destination = try UploadDestinations.make(for: url, settings: settings)
            let http = try #require((destination as? ResumableUploader)?.configuration.http ?? (destination as? S3Uploader)?.configuration.http)
            #expect(http.trust == expected)
        }
    }

    /// The system's authorities come from libcurl's CA directory alone when OpenSSL can look
    /// certificates up in it by subject hash (so the bundle is not parsed whole at every
    /// connection); a directory without such names keeps libcurl's defaults.
    @Test func onlyAHashedDirectoryStandsForTheSystemsAuthorities() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("pd-trust-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        func directory(_ name: String, holding files: [String]) throws -> String {
            let url = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for file in files { try Data("x".utf8).write(to: url.appendingPathComponent(file)) }
            return url.path
        }
        #expect(CurlEasy.holdsHashedCertificates(try directory("hashed", holding: ["ca.pem", "5ed36f99.0"])))
        #expect(CurlEasy.holdsHashedCertificates(try directory("second", holding: ["a94d09e5.1"])))
        #expect(!CurlEasy.holdsHashedCertificates(try directory("plain", holding: ["ca.pem", "ca-certificates.crt", "5ed36f99.pem"])))
        #expect(!CurlEasy.holdsHashedCertificates(try directory("near", holding: ["5ed36f9.0", "5ed36f99.", "5ed36g99.0", "5ed36f99.0.bak"])))
        #expect(!CurlEasy.holdsHashedCertificates(root.appendingPathComponent("missing").path))
        // Debian's libcurl names /etc/ssl/certs, which update-ca-certificates fills with hashed links.
        if let system = CurlEasy.systemCADirectory {
            #expect(CurlEasy.holdsHashedCertificates(system))
        }
    }
}
