import Foundation
import Testing
@testable import Transfer

/// Credentials come from the environment or the shared credentials file, and never show.
@Suite struct S3CredentialsTests {
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzSECRET"

    @Test func environmentWins() throws {
        let credentials = try S3Credentials.resolve(environment: [
            "AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": Self.secret, "AWS_SESSION_TOKEN": "tok",
        ], home: "/nonexistent")
        #expect(credentials.accessKeyID == "AKIAENV")
        #expect(credentials.secretAccessKey == Self.secret)
        #expect(credentials.sessionToken == "tok")
    }

    @Test func credentialsFileProfiles() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("s3creds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home.appendingPathComponent(".aws"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        try """
            # comment
            [default]
            aws_access_key_id = AKIADEFAULT
            aws_secret_access_key = \(Self.secret)

            [work]
            aws_access_key_id=AKIAWORK
            aws_secret_access_key=other
            aws_session_token = sess
            """.write(to: home.appendingPathComponent(".aws/credentials"), atomically: true, encoding: .utf8)
        let standard = try S3Credentials.resolve(environment: [:], home: home.path)
        #expect(standard.accessKeyID == "AKIADEFAULT")
        #expect(standard.sessionToken == nil)
        let work = try S3Credentials.resolve(environment: ["AWS_PROFILE": "work"], home: home.path)
        #expect(work.accessKeyID == "AKIAWORK")
        #expect(work.sessionToken == "sess")
        #expect(throws: TransferError.self) { try S3Credentials.resolve(environment: ["AWS_PROFILE": "none"], home: home.path) }
    }

    @Test func missingCredentialsAreAClearError() {
        #expect {
            _ = try S3Credentials.resolve(environment: [:], home: "/nonexistent")
        } throws: { error in
            (error as? TransferError)?.message.contains("AWS_ACCESS_KEY_ID") == true
        }
    }

    @Test func nothingPrintsTheSecret() throws {
        let credentials = try #require(S3Credentials(accessKeyID: "AKIAPRINT", secretAccessKey: Self.secret, sessionToken: "SESSIONTOKEN"))
        let configuration = try S3Configuration(destination: "s3://photos/p", credentials: credentials)
        let uploader = S3Uploader(configuration: configuration)
        let texts = ["\(credentials)", String(reflecting: credentials), "\(configuration)", String(reflecting: configuration),
                     "\(uploader.signer)", String(reflecting: uploader.signer)]
        for text in texts {
            #expect(!text.contains(Self.secret))
            #expect(!text.contains("SESSIONTOKEN"))
        }
    }

    @Test func regionComesFromOptionsThenEnvironment() {
        #expect(UploadDestinations.Settings(environment: [:]).resolvedRegion == "us-east-1")
        #expect(UploadDestinations.Settings(environment: ["AWS_DEFAULT_REGION": "eu-west-2"]).resolvedRegion == "eu-west-2")
        #expect(UploadDestinations.Settings(environment: ["AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "x"]).resolvedRegion == "ap-south-1")
        #expect(UploadDestinations.Settings(s3Region: "sa-east-1", environment: ["AWS_REGION": "ap-south-1"]).resolvedRegion == "sa-east-1")
    }

    @Test func factoryChoosesByScheme() throws {
        let settings = UploadDestinations.Settings(environment: ["AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"], home: nil)
        #expect(try UploadDestinations.make(for: "s3://bucket/p", settings: settings) is S3Uploader)
        #expect(try UploadDestinations.make(for: "http://127.0.0.1:8080/uploads", settings: settings) is ResumableUploader)
        #expect(throws: TransferError.self) { try UploadDestinations.make(for: "ftp://x/y", settings: settings) }
        #expect(throws: TransferError.self) {
            try UploadDestinations.make(for: "s3://bucket/p", settings: UploadDestinations.Settings(environment: [:], home: nil))
        }
    }
}
