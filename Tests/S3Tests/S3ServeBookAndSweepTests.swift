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
    /// A bucket store keeps everything in the bucket, so `--dir` beside it is refused; the S3
    /// options need `--store`; a layout that is none, and a store that is no bucket URL, are refused.
    @Test func refusesWhatABucketStoreCannotDo() async throws {
        let aws = ["AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "example-secret-key"]
        let both = try await S3CLITests.run(["serve", "--store", "s3://photos/receiver", "--dir", "/nonexistent/x", "tokens", "list"], aws: aws)
        #expect(both.status == 64)
        #expect(both.stderr.contains("give --store or --dir, not both"), "\(both.stderr)")
        let endpoint = try await S3CLITests.run(["serve", "--dir", "/nonexistent/x", "--s3-endpoint", "http://127.0.0.1:9"], aws: aws)
        #expect(endpoint.status == 64)
        #expect(endpoint.stderr.contains("go with --store"), "\(endpoint.stderr)")
        let layout = try await S3CLITests.run(["serve", "--store", "s3://photos/receiver", "--layout", "both"], aws: aws)
        #expect(layout.status == 64)
        #expect(layout.stderr.contains("--layout wants id or path"), "\(layout.stderr)")
        let directory = try await S3CLITests.run(["serve", "--store", "/srv/photos"], aws: aws)
        #expect(directory.status == 64)
        #expect(directory.stderr.contains("--store wants s3://BUCKET/PREFIX"), "\(directory.stderr)")
    }
}

/// The account book of a bucket store: edited in the bucket by `serve --store … accounts|tokens`,
/// read by every instance.
@Suite struct S3ServeAccountsTests {
    /// An account and a device token made in the bucket work on every instance (the object goes to
    /// the account's keys), and a revocation stops the token on every instance.
    @Test func tokensMadeInTheBucketWorkOnEveryInstanceUntilRevoked() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/team"
        let tool = ["--store", store, "--s3-endpoint", "http://127.0.0.1:\(moto.port)"]
        let aws = S3CLITests.environment(moto)
        let added = try await S3CLITests.run(["serve"] + tool + ["accounts", "add", "anna"], aws: aws)
        #expect(added.status == 0, "\(added.stderr)")
        let made = try await S3CLITests.run(["serve"] + tool + ["tokens", "add", "anna", "phone"], aws: aws)
        #expect(made.status == 0, "\(made.stderr)")
        let token = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await S3CLITests.keys(bucket, prefix: "team/").contains("team/accounts.json"))

        let instances = [try S3ServeInstance(store: store, moto: moto), try S3ServeInstance(store: store, moto: moto)]
        let bearer = ["-H", "Authorization: Bearer \(token)"]
        let refused = try S3ServeTests.curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "--data-binary", "x",
                                             instances[0].url + "/uploads"])
        #expect(refused == "401")
        let file = try TestFile(size: 20_000, seed: 359)
        defer { file.remove() }
        let created = try S3ServeTests.curl(["-s", "-i", "-X", "POST", "-H", "Expect:", "--data-binary", "@" + file.path,
                                             "-H", "Upload-Complete: ?1"] + bearer + S3ServeTests.version + [instances[0].url + "/uploads"])
        #expect(created.contains("HTTP/1.1 201"), "\(created)")
        let line = try #require(created.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-server-resource-id:") })
        let objectID = String(line.split(separator: ":")[1]).trimmingCharacters(in: .whitespaces)
        #expect(try await S3CLITests.keys(bucket, prefix: "team/accounts/anna/objects/").contains("team/accounts/anna/objects/\(objectID)"))
        let digest = try FileDigest.sha256Hex(path: file.path)
        let found = try S3ServeTests.curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-I"] + bearer
                                          + [instances[1].url + "/objects/by-digest/\(digest)"])
        #expect(found == "200")

        let listed = try await S3CLITests.run(["serve"] + tool + ["tokens", "list"], aws: aws)
        let id = try #require(listed.stdout.split(separator: "\n").dropFirst().first?.split(separator: " ").first.map(String.init))
        let revoked = try await S3CLITests.run(["serve"] + tool + ["tokens", "revoke", id], aws: aws)
        #expect(revoked.status == 0, "\(revoked.stderr)")
        for instance in instances {
            let deadline = Date().addingTimeInterval(20)
            var status = ""
            while Date() < deadline {
                status = try S3ServeTests.curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-I"] + bearer
                                               + [instance.url + "/objects/by-digest/\(digest)"])
                if status == "401" { break }
                usleep(200_000)
            }
            if status != "401" {
                // What the instance and the bucket held, to tell a mirror that stopped syncing
                // from a book the revocation never reached.
                let book = try await bucket.send("GET", key: "team/accounts.json")
                Issue.record("\(instance.url) still answers \(status) 20 s after the revocation; the bucket's book (\(book.status)): \(String(decoding: book.body, as: UTF8.self)); its log:\n\(instance.logTail())")
            }
        }
    }

    /// An account's quota is weighed against what its objects hold in the bucket, whichever
    /// instance stored them: the upload that would pass it gets 507 before its bytes are taken.
    @Test func quotaIsWeighedAgainstTheBucket() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/quota"
        let tool = ["--store", store, "--s3-endpoint", "http://127.0.0.1:\(moto.port)"]
        let aws = S3CLITests.environment(moto)
        #expect(try await S3CLITests.run(["serve"] + tool + ["accounts", "add", "bob", "--quota", "100000"], aws: aws).status == 0)
        let made = try await S3CLITests.run(["serve"] + tool + ["tokens", "add", "bob", "laptop"], aws: aws)
        let bearer = ["-H", "Authorization: Bearer \(made.stdout.trimmingCharacters(in: .whitespacesAndNewlines))"]
        let instances = [try S3ServeInstance(store: store, moto: moto), try S3ServeInstance(store: store, moto: moto)]
        let files = [try TestFile(size: 60_000, seed: 360), try TestFile(size: 60_000, seed: 361)]
        defer { files.forEach { $0.remove() } }
        var statuses: [String] = []
        for (file, instance) in zip(files, instances) {
            statuses.append(try S3ServeTests.curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Expect:",
                                                   "--data-binary", "@" + file.path, "-H", "Upload-Complete: ?1"]
                                                  + bearer + S3ServeTests.version + [instance.url + "/uploads"]))
        }
        #expect(statuses == ["201", "507"])
        let objects = try await S3CLITests.keys(bucket, prefix: "quota/accounts/bob/objects/").filter { !$0.hasSuffix(".json") }
        #expect(objects.count == 1)
    }
}
