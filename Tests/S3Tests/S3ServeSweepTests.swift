import Foundation
import Testing
@testable import Transfer

/// The expiry sweep of `serve --store s3://…`: abandoned uploads and multipart uploads go from
/// the bucket without any request asking for them.
@Suite struct S3ServeSweepTests {
    /// An upload left with a part and a tail, and a multipart upload no record names (an instance
    /// killed between creating it and committing it), are gone once the partial TTL has passed:
    /// the record, the tail, and both multipart uploads, aborted.
    @Test func sweepRemovesAbandonedUploadsAndAbortsTheirMultipartUploads() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/sweep"
        let file = try TestFile(size: 6_000_000, seed: 355)
        defer { file.remove() }
        let orphan = try await bucket.send("POST", key: "sweep/objects/0123456789abcdef0123456789abcdef", query: [("uploads", "")])
        #expect(orphan.status == 200)

        let instance = try S3ServeInstance(store: store, moto: moto, arguments: ["--partial-ttl", "2"])
        let id = try S3ServeTests.create(on: instance)
        let patched = try S3ServeTests.curl(["-s", "-i", "-X", "PATCH", "-H", "Expect:", "--data-binary", "@" + file.path,
                                             "-H", "Upload-Offset: 0", "-H", "Upload-Complete: ?0"]
                                            + S3ServeTests.partial + S3ServeTests.version + [instance.url + "/uploads/\(id)"])
        #expect(patched.hasPrefix("HTTP/1.1 204"), "\(patched)")
        #expect(try await Self.multipartUploads(bucket).count == 2)
        #expect(try await S3CLITests.keys(bucket, prefix: "sweep/uploads/").count == 2, "the record and its tail")

        let deadline = Date().addingTimeInterval(60)
        var left: (uploads: [String], keys: [String]) = (["?"], ["?"])
        while Date() < deadline {
            left = (try await Self.multipartUploads(bucket), try await S3CLITests.keys(bucket, prefix: "sweep/uploads/"))
            if left.uploads.isEmpty && left.keys.isEmpty { break }
            usleep(200_000)
        }
        #expect(left.uploads.isEmpty, "\(left.uploads)")
        #expect(left.keys.isEmpty, "\(left.keys)")
        let head = try S3ServeTests.curl(["-s", "-I"] + S3ServeTests.version + [instance.url + "/uploads/\(id)"])
        #expect(head.hasPrefix("HTTP/1.1 404"), "\(head)")
    }

    /// The bucket's multipart uploads in progress, by upload id.
    static func multipartUploads(_ bucket: S3Uploader) async throws -> [String] {
        let listing = try await bucket.send("GET", key: nil, query: [("uploads", "")])
        #expect(listing.status == 200)
        let text = Substring(String(decoding: listing.body, as: UTF8.self))
        return S3XML.elements("Upload", in: text).compactMap { S3XML.value("UploadId", in: $0) }
    }
}

/// What `serve --store` refuses before it starts.
@Suite struct S3ServeUsageTests {
    /// The account book is not in the bucket yet: editing it needs `--dir`; the S3 options need
    /// `--store`; a store that is no bucket URL is refused.
    @Test func refusesWhatABucketStoreCannotDo() async throws {
        let aws = ["AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "example-secret-key"]
        let tokens = try await S3CLITests.run(["serve", "--store", "s3://photos/receiver", "tokens", "list"], aws: aws)
        #expect(tokens.status == 64)
        #expect(tokens.stderr.contains("give --dir"), "\(tokens.stderr)")
        let endpoint = try await S3CLITests.run(["serve", "--dir", "/nonexistent/x", "--s3-endpoint", "http://127.0.0.1:9"], aws: aws)
        #expect(endpoint.status == 64)
        #expect(endpoint.stderr.contains("go with --store"), "\(endpoint.stderr)")
        let directory = try await S3CLITests.run(["serve", "--store", "/srv/photos"], aws: aws)
        #expect(directory.status == 64)
        #expect(directory.stderr.contains("--store wants s3://BUCKET/PREFIX"), "\(directory.stderr)")
    }
}
