import AssetStore
import Foundation
import Testing
import Transfer

/// A destination is all of where it is: scheme, host, port and path; for S3 the endpoint, bucket
/// and prefix (and on AWS the region, which picks the endpoint). Never a secret.
@Suite struct DestinationIdentityTests {
    private static let credentials = S3Credentials(accessKeyID: "AKIAIDENTITY", secretAccessKey: "identity")!

    private func s3(_ url: String, endpoint: String? = nil, region: String = "us-east-1") throws -> DestinationIdentity {
        S3Uploader(configuration: try S3Configuration(destination: url, endpoint: endpoint, region: region, credentials: Self.credentials)).identity
    }

    @Test func anotherEndpointIsAnotherS3Destination() throws {
        let a = try s3("s3://photos/c", endpoint: "http://127.0.0.1:9000")
        #expect(a.key == "s3://photos/c at http://127.0.0.1:9000")
        #expect(try s3("s3://photos/c/", endpoint: "HTTP://127.0.0.1:9000/") == a)
        #expect(try s3("s3://photos/c", endpoint: "http://127.0.0.1:9001") != a)
        #expect(try s3("s3://photos/d", endpoint: "http://127.0.0.1:9000") != a)
        #expect(try s3("s3://other/c", endpoint: "http://127.0.0.1:9000") != a)
        // With an endpoint the region only signs; on AWS it picks the endpoint.
        #expect(try s3("s3://photos/c", endpoint: "http://127.0.0.1:9000", region: "eu-west-1") == a)
        #expect(try s3("s3://photos/c").key == "s3://photos/c at https://s3.us-east-1.amazonaws.com")
        #expect(try s3("s3://photos/c", region: "eu-west-1") != (try s3("s3://photos/c")))
        #expect(try s3("s3://photos").key == "s3://photos at https://s3.us-east-1.amazonaws.com")
    }

    @Test func theIdentityWithoutCredentialsIsTheUploadersOwn() throws {
        let settings = UploadDestinations.Settings(s3Endpoint: "http://127.0.0.1:9000", s3Region: "eu-west-1")
        #expect(try DestinationIdentity(url: "s3://photos/c", settings: settings) == (try s3("s3://photos/c", endpoint: "http://127.0.0.1:9000")))
        #expect(try DestinationIdentity(url: "s3://photos/c", settings: UploadDestinations.Settings(s3Region: "eu-west-1"))
            == (try s3("s3://photos/c", region: "eu-west-1")))
        #expect(try DestinationIdentity(url: "http://Host/Up", settings: settings).key == "http://host/Up")
    }

    /// What a job's identity names leads back to the same identity: the agent builds its uploads
    /// from it.
    @Test func partsLeadBackToTheSamePlace() throws {
        for identity in [try s3("s3://photos/c", endpoint: "http://127.0.0.1:9000"), try s3("s3://photos/c", region: "eu-west-1"),
                         try s3("s3://photos/a at b", endpoint: "http://127.0.0.1:9000")] {
            let parts = DestinationIdentity.parts(of: identity.key)
            let settings = UploadDestinations.Settings(s3Endpoint: parts.s3Endpoint, s3Region: parts.s3Region, s3Credentials: Self.credentials)
            #expect(try UploadDestinations.make(for: parts.url, settings: settings).identity == identity)
        }
        #expect(DestinationIdentity.parts(of: "http://127.0.0.1:8080/uploads") == DestinationIdentity.Parts(url: "http://127.0.0.1:8080/uploads"))
        #expect(DestinationIdentity.isBareS3("s3://photos/c"))
        #expect(!DestinationIdentity.isBareS3("s3://photos/c at http://127.0.0.1:9000"))
    }

    /// The HTTP identity drops what could be a secret, keeps the path's case, and is the form the
    /// store keeps (`AssetStore.destinationKey`, the store's copy of the rule).
    @Test(arguments: [
        ("http://bob:pw@Host.Example:8080/Uploads/?access_token=t#f", "http://host.example:8080/Uploads"),
        ("HTTPS://HOST/My%20Photos/uploads", "https://host/My%20Photos/uploads"),
        ("http://127.0.0.1:8080/uploads", "http://127.0.0.1:8080/uploads"),
        ("http://a@b@host/x", "http://host/x"),
        ("http://host", "http://host"),
    ])
    func httpIdentity(url: String, key: String) {
        #expect(DestinationIdentity(url: url).key == key)
        #expect(AssetStore.destinationKey(url) == key)
    }

    @Test func secretsAreNamed() {
        #expect(DestinationIdentity.secretPart(of: "http://bob:pw@host/uploads")?.hasPrefix("user info") == true)
        #expect(DestinationIdentity.secretPart(of: "http://host/uploads?access_token=x")?.hasPrefix("query") == true)
        #expect(DestinationIdentity.secretPart(of: "http://host/uploads#x")?.hasPrefix("fragment") == true)
        #expect(DestinationIdentity.secretPart(of: "http://host/uploads/a@b") == nil)
        #expect(DestinationIdentity.secretPart(of: "s3://photos/c") == nil)
    }
}
