import UploadProtocol
import Foundation
import Testing
@testable import Transfer

/// The signer against published vectors: AWS's SigV4 test suite (get-vanilla and friends, region
/// us-east-1, service "service", 2015-08-30T12:36:00Z) and the worked examples in S3's
/// documentation ("Examples: Signature Calculations", examplebucket, 2013-05-24T00:00:00Z).
@Suite struct SigV4SignerTests {
    static let suiteCredentials = S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    static let s3Credentials = S3Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)  // 20150830T123600Z
    static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)     // 20130524T000000Z

    @Test func timestampsAreUTC() {
        #expect(SigV4Signer.timestamp(Self.suiteDate) == "20150830T123600Z")
        #expect(SigV4Signer.timestamp(Self.s3Date) == "20130524T000000Z")
    }

    /// get-vanilla, post-vanilla and get-vanilla-query-order-key-case: the whole Authorization value.
    @Test(arguments: [
        ("GET", [(String, String)](), "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ("POST", [], "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
        ("GET", [("Param2", "value2"), ("Param1", "value1")], "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
    ])
    func awsTestSuite(method: String, query: [(String, String)], signature: String) throws {
        let credentials = try #require(Self.suiteCredentials)
        let signer = SigV4Signer(credentials: credentials, region: "us-east-1", service: "service")
        let added = try signer.signatureHeaders(method: method, path: "/", query: query.map { (name: $0.0, value: $0.1) },
                                                headers: [("Host", "example.amazonaws.com")],
                                                payloadHash: SigV4Signer.emptyPayloadHash, date: Self.suiteDate)
        #expect(added.first { $0.name == "x-amz-date" }?.value == "20150830T123600Z")
        #expect(added.first { $0.name == "Authorization" }?.value
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=\(signature)")
    }

    /// S3's GET Object example: the canonical request, the string to sign and the signature.
    @Test func s3GetObjectExample() throws {
        let signer = SigV4Signer(credentials: try #require(Self.s3Credentials), region: "us-east-1")
        let headers: [(name: String, value: String)] = [
            ("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
            ("x-amz-content-sha256", SigV4Signer.emptyPayloadHash), ("x-amz-date", "20130524T000000Z"),
        ]
        let canonical = signer.canonicalRequest(method: "GET", path: "/test.txt", query: [], headers: headers,
                                                payloadHash: SigV4Signer.emptyPayloadHash)
        #expect(canonical.text == """
            GET
            /test.txt

            host:examplebucket.s3.amazonaws.com
            range:bytes=0-9
            x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            x-amz-date:20130524T000000Z

            host;range;x-amz-content-sha256;x-amz-date
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            """)
        #expect(try signer.stringToSign(canonicalRequest: canonical.text, timestamp: "20130524T000000Z") == """
            AWS4-HMAC-SHA256
            20130524T000000Z
            20130524/us-east-1/s3/aws4_request
            7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
            """)
        let added = try signer.signatureHeaders(method: "GET", path: "/test.txt", query: [], headers: Array(headers.prefix(3)),
                                                payloadHash: SigV4Signer.emptyPayloadHash, date: Self.s3Date)
        #expect(added.last?.value == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    /// S3's PUT Object example: a key with `$`, encoded once (`%24`), and a body hash.
    @Test func s3PutObjectExample() throws {
        let signer = SigV4Signer(credentials: try #require(Self.s3Credentials), region: "us-east-1")
        let body = try FileDigest.sha256(bytes: Array("Welcome to Amazon S3.".utf8))
        let hash = Hex.string(body)
        #expect(hash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let path = "/" + SigV4Signer.uriEncode("test$file.text", keepSlash: true)
        #expect(path == "/test%24file.text")
        let added = try signer.signatureHeaders(method: "PUT", path: path, query: [], headers: [
            ("Host", "examplebucket.s3.amazonaws.com"), ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"), ("x-amz-content-sha256", hash),
        ], payloadHash: hash, date: Self.s3Date)
        #expect(added.last?.value.hasSuffix("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
                                            + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd") == true)
    }

    /// S3's GET Bucket Lifecycle (a bare query name) and GET Bucket (List Objects) examples.
    @Test(arguments: [
        ([("lifecycle", "")], "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
        ([("prefix", "J"), ("max-keys", "2")], "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
    ])
    func s3BucketExamples(query: [(String, String)], signature: String) throws {
        let signer = SigV4Signer(credentials: try #require(Self.s3Credentials), region: "us-east-1")
        let added = try signer.signatureHeaders(method: "GET", path: "/", query: query.map { (name: $0.0, value: $0.1) }, headers: [
            ("Host", "examplebucket.s3.amazonaws.com"), ("x-amz-content-sha256", SigV4Signer.emptyPayloadHash),
        ], payloadHash: SigV4Signer.emptyPayloadHash, date: Self.s3Date)
        #expect(added.last?.value.hasSuffix("Signature=\(signature)") == true)
    }

    @Test func sessionTokenIsSentAndSigned() throws {
        let credentials = try #require(S3Credentials(accessKeyID: "ASIAEXAMPLE", secretAccessKey: "secret", sessionToken: "token/+="))
        let signer = SigV4Signer(credentials: credentials, region: "eu-west-1")
        let added = try signer.signatureHeaders(method: "HEAD", path: "/b/k", query: [], headers: [("host", "h")],
                                                payloadHash: SigV4Signer.emptyPayloadHash, date: Self.s3Date)
        #expect(added.contains { $0.name == "x-amz-security-token" && $0.value == "token/+=" })
        #expect(added.last?.value.contains("SignedHeaders=host;x-amz-date;x-amz-security-token,") == true)
    }

    @Test(arguments: [
        ("a b/c", false, "a%20b%2Fc"),
        ("a b/c", true, "a%20b/c"),
        ("-_.~AZaz09", false, "-_.~AZaz09"),
        ("ñ", false, "%C3%B1"),
        ("x+y=z&", false, "x%2By%3Dz%26"),
    ])
    func uriEncoding(text: String, keepSlash: Bool, encoded: String) {
        #expect(SigV4Signer.uriEncode(text, keepSlash: keepSlash) == encoded)
    }

    @Test func headerValuesAreTrimmedAndSpacesCollapsed() {
        #expect(SigV4Signer.canonicalHeaderValue("  a   b  c ") == "a b c")
    }
}
