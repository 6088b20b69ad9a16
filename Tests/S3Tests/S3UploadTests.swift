import Foundation
import Testing
@testable import Transfer

/// Single-PUT uploads against moto with signature checking on.
@Suite struct S3UploadTests {
    @Test func wrongSecretIsRefusedAndPermanent() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let secret = "definitely-not-the-secret-0123456789"
        let wrong = try #require(S3Credentials(accessKeyID: moto.credentials.accessKeyID, secretAccessKey: secret))
        let uploader = S3Uploader(configuration: try moto.configuration(bucket: bucket.configuration.bucket, credentials: wrong, retries: 3))
        let file = try TestFile(size: 1000, seed: 1)
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path, verdictJSON: "{}")
        do {
            _ = try await uploader.upload(file: file.path, metadata: metadata)
            Issue.record("an upload with a wrong secret succeeded")
        } catch {
            #expect(error.httpStatus == 403)
            #expect(error.code == .unauthorized)
            #expect(error.classification == .permanent)
            #expect(error.message.contains("SignatureDoesNotMatch"))
            #expect(!"\(error)".contains(secret))
            #expect(!String(reflecting: error).contains(secret))
        }
        // Nothing was stored.
        let key = bucket.configuration.objectKey(for: metadata)
        #expect(try await bucket.send("HEAD", key: key).status == 404)
    }

    @Test func smallFileIsOnePutWithVerdictMetadata() async throws {
        let moto = try await MotoServer.shared()
        let uploader = try await moto.makeBucket()
        let file = try TestFile(size: 300_000, seed: 2, name: "Zoë's photo.jpg")
        defer { file.remove() }
        let verdict = #"{"label":"keep","faces":[{"x":1,"y":2,"w":3,"h":4,"score":0.9}],"note":"café"}"#
        let metadata = try UploadMetadata(file: file.path, verdictJSON: verdict)
        var checkpoints = 0
        let receipt = try await uploader.upload(file: file.path, metadata: metadata, checkpoint: { _ in checkpoints += 1 })
        let key = "photos/\(metadata.sha256Hex)-Zo__s_photo.jpg"
        #expect(checkpoints == 0)
        #expect(receipt.resumable == false)
        #expect(receipt.location == "s3://\(uploader.configuration.bucket)/\(key)")
        let etag = try #require(receipt.headers["etag"])
        #expect(receipt.serverID == "\(key) \(etag.replacingOccurrences(of: "\"", with: ""))")
        #expect(receipt.bytesSent == 300_000)

        let object = try await uploader.send("GET", key: key)
        #expect(object.status == 200)
        #expect(object.body == file.bytes)
        #expect(object.headers["content-type"] == "image/jpeg")
        let stored = try #require(object.headers[S3Metadata.verdictHeader])
        #expect(stored.hasPrefix("=?UTF-8?B?"))
        #expect(S3Metadata.decode(stored) == verdict)
        #expect(object.headers[S3Metadata.sha256Header] == metadata.sha256Hex)
        #expect(object.headers[S3Metadata.filenameHeader].map(S3Metadata.decode) == "Zoë's photo.jpg")

        // The same photo again lands on the same key: one object, not two.
        let again = try await uploader.upload(file: file.path, metadata: metadata)
        #expect(again.serverID == receipt.serverID)
        let listing = try await uploader.send("GET", key: nil, query: [("list-type", "2")])
        #expect(S3XML.elements("Contents", in: Substring(String(decoding: listing.body, as: UTF8.self))).count == 1)
    }

    @Test func asciiVerdictIsSentAsIs() async throws {
        let moto = try await MotoServer.shared()
        let uploader = try await moto.makeBucket()
        let file = try TestFile(size: 10, seed: 3, name: "a.png")
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path, verdictJSON: #"{"label":"discard","score":0.12}"#)
        let receipt = try await uploader.upload(file: file.path, metadata: metadata)
        let key = try #require(receipt.location.flatMap { uploader.configuration.key(fromObjectURI: $0) })
        let head = try await uploader.send("HEAD", key: key)
        #expect(head.headers[S3Metadata.verdictHeader] == #"{"label":"discard","score":0.12}"#)
        #expect(head.headers["content-type"] == "image/png")
    }

    @Test func reachabilityAndAMissingBucket() async throws {
        let moto = try await MotoServer.shared()
        let uploader = S3Uploader(configuration: try moto.configuration(bucket: "no-such-bucket-here"))
        try await uploader.checkReachable()
        let file = try TestFile(size: 10, seed: 4)
        defer { file.remove() }
        do {
            _ = try await uploader.upload(file: file.path, metadata: try UploadMetadata(file: file.path))
            Issue.record("an upload to a missing bucket succeeded")
        } catch {
            #expect(error.code == .notFound)
            #expect(error.classification == .permanent)
        }
        let offline = S3Uploader(configuration: try moto.configuration(bucket: "no-such-bucket-here", port: 1))
        await #expect(throws: TransferError.self) { try await offline.checkReachable() }
    }
}
