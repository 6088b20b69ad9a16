import FaultProxy
import Foundation
import Synchronization
import SystemSupport
import Testing
@testable import Transfer

/// The proof of an S3 upload is the store's own figures (ETag = MD5 of what it holds, its SHA-256
/// checksum), never the metadata PhotoDrain sent and the store echoes back.
@Suite struct S3ProofTests {
    static let flipped = FaultPlan { _ in .flipBody(atByte: 4000) }

    /// The reason of a `.mismatched` answer; nil for any other.
    static func mismatchReason(_ copy: StoredCopy) -> String? {
        if case .mismatched(let reason) = copy { return reason }
        return nil
    }

    /// A proxy flips one bit of every request body: the upload fails as transient (the bytes
    /// changed on the way), no object is left under the photo's key, and without the proxy the
    /// same upload succeeds with a proof naming the store's figure.
    @Test(arguments: [300_000, S3MultipartTests.size])
    func aBodyChangedOnTheWayIsNeverProof(size: Int) async throws {
        let moto = try await MotoServer.shared()
        let direct = try await moto.makeBucket()
        let proxy = try FaultProxy(targetPort: moto.port, plan: Self.flipped)
        defer { proxy.stop() }
        let through = S3Uploader(configuration: try moto.configuration(bucket: direct.configuration.bucket, port: proxy.port, retries: 1))
        let file = try TestFile(size: size, seed: 77)
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path)
        let key = direct.configuration.objectKey(for: metadata)
        let log = S3MultipartTests.CheckpointLog()
        do {
            let receipt = try await through.upload(file: file.path, metadata: metadata, checkpoint: { log.save($0) })
            Issue.record("an upload whose bytes changed on the way was accepted: \(receipt)")
        } catch {
            #expect(error.isTransient, "\(error)")
        }
        #expect(proxy.injectedFaults.count > 0)
        #expect(try await direct.send("HEAD", key: key).status == 404)

        // The fault gone, the next run (resuming what the first left) proves the upload.
        let receipt = try await direct.upload(file: file.path, metadata: metadata, resumeFrom: log.last)
        #expect(receipt.proof == .verified)
        let figure = try #require(receipt.headers[S3UploadSession.proofHeader])
        #expect(figure.hasPrefix("etag:") || figure.hasPrefix("sha256:"))
        let object = try await direct.send("GET", key: key)
        #expect(object.body == file.bytes)
        let head = try await direct.send("HEAD", key: key, headers: [("x-amz-checksum-mode", "ENABLED")])
        let copy = try await direct.storedCopy(sha256Hex: metadata.sha256Hex, size: Int64(size), filename: metadata.filename,
                                               serverID: receipt.serverID, deep: true)
        #expect(copy == .present(serverID: receipt.serverID), "\(head.headers) \(receipt.headers)")
    }

    /// Once the store's ETags have proven to be MD5s, single PUTs go without the checksum header
    /// (`Content-MD5` alone): changed bytes are still never proof.
    @Test func putsWithoutTheChecksumStillCatchChangedBytes() async throws {
        let moto = try await MotoServer.shared()
        let direct = try await moto.makeBucket()
        let flipping = Mutex(false)
        let proxy = try FaultProxy(targetPort: moto.port, plan: FaultPlan { _ in flipping.withLock { $0 } ? .flipBody(atByte: 4000) : nil })
        defer { proxy.stop() }
        let through = S3Uploader(configuration: try moto.configuration(bucket: direct.configuration.bucket, port: proxy.port, retries: 1))
        let first = try TestFile(size: 200_000, seed: 81)
        let second = try TestFile(size: 200_000, seed: 82)
        defer { first.remove(); second.remove() }
        let proven = try await through.upload(file: first.path, metadata: try UploadMetadata(file: first.path))
        #expect(proven.headers[S3UploadSession.proofHeader]?.hasPrefix("etag:") == true)
        #expect(through.singlePutETagsAreMD5.withLock { $0 } == true)

        flipping.withLock { $0 = true }
        let metadata = try UploadMetadata(file: second.path)
        do {
            let receipt = try await through.upload(file: second.path, metadata: metadata)
            Issue.record("a body changed on the way was accepted without the checksum: \(receipt)")
        } catch {
            #expect(error.code == .corruptedInTransit, "\(error)")
        }
        #expect(try await direct.send("HEAD", key: direct.configuration.objectKey(for: metadata)).status == 404)
    }

    /// Other bytes of the same length written over the object, our metadata kept: `verify` no
    /// longer counts it present (the store's ETag changed), with or without `--deep`.
    @Test func anObjectOverwrittenWithTheSameMetadataIsMismatched() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let file = try TestFile(size: 200_000, seed: 78)
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path)
        let receipt = try await bucket.upload(file: file.path, metadata: metadata)
        let key = bucket.configuration.objectKey(for: metadata)
        #expect(try await bucket.storedCopy(sha256Hex: metadata.sha256Hex, size: 200_000, filename: metadata.filename,
                                            serverID: receipt.serverID) == .present(serverID: receipt.serverID))

        var other = file.bytes
        other[1234] ^= 0x40
        let overwrite = try await bucket.send("PUT", key: key, headers: try S3Metadata.headers(for: metadata), body: .bytes(other))
        #expect(overwrite.status == 200)
        #expect(try await bucket.send("HEAD", key: key).headers[S3Metadata.sha256Header] == metadata.sha256Hex)
        for deep in [false, true] {
            let copy = try await bucket.storedCopy(sha256Hex: metadata.sha256Hex, size: 200_000, filename: metadata.filename,
                                                   serverID: receipt.serverID, deep: deep)
            let reason = try #require(Self.mismatchReason(copy), "an overwritten object counted as \(copy) (deep: \(deep))")
            #expect(reason.contains(key))
        }
    }

    /// `--deep` reads the bytes: an object whose figures were recorded from other bytes (a mark
    /// made before the store's figures were the proof) is caught only by downloading it.
    @Test func deepCatchesWhatTheFiguresCannot() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let file = try TestFile(size: 100_000, seed: 79)
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path)
        let key = bucket.configuration.objectKey(for: metadata)
        var other = file.bytes
        other[99] ^= 0x01
        let put = try await bucket.send("PUT", key: key, headers: try S3Metadata.headers(for: metadata), body: .bytes(other))
        let serverID = "\(key) \(S3StoreProof.bare(try #require(put.headers["etag"])))"
        #expect(try await bucket.storedCopy(sha256Hex: metadata.sha256Hex, size: 100_000, filename: metadata.filename,
                                            serverID: serverID) == .present(serverID: serverID))
        let deep = try await bucket.storedCopy(sha256Hex: metadata.sha256Hex, size: 100_000, filename: metadata.filename,
                                               serverID: serverID, deep: true)
        let reason = try #require(Self.mismatchReason(deep), "--deep counted other bytes as \(deep)")
        #expect(reason.contains("downloaded and hashed"))
    }

    /// A file rewritten after it was hashed (its SHA-256 names the object) is not sent as if it
    /// were the hashed one: moto ignores the checksum header, so without the check the store's
    /// ETag (the MD5 of the new bytes) would match an MD5 read at upload time.
    @Test(arguments: [100_000, S3MultipartTests.size])
    func aFileChangedSinceHashingIsNotProvenUnderTheOldDigest(size: Int) async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket(retries: 1)
        let file = try TestFile(size: size, seed: 80)
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path)
        var rewritten = file.bytes
        rewritten[size / 2] ^= 0xFF
        try Data(rewritten).write(to: URL(fileURLWithPath: file.path))
        do {
            let receipt = try await bucket.upload(file: file.path, metadata: metadata)
            Issue.record("a file changed since hashing was uploaded under its old digest: \(receipt)")
        } catch {
            #expect(error.code == .fileUnreadable, "\(error)")
            #expect(error.message.contains("changed"))
        }
        #expect(try await bucket.send("HEAD", key: bucket.configuration.objectKey(for: metadata)).status == 404)
    }

    /// Which figures prove what (no store needed).
    @Test func theStoresFiguresDecide() throws {
        let md5 = try MD5.digest(Array("hello".utf8))
        let sha = try SHA256.digest(Array("hello".utf8))
        #expect(SHA256.hex(md5) == "5d41402abc4b2a76b9719d911017c592")
        let single = S3StoreProof(md5: md5, sha256: sha)
        #expect(single.check(headers: [:], etag: "\"5d41402abc4b2a76b9719d911017c592\"") == .matches(figure: "etag:5d41402abc4b2a76b9719d911017c592"))
        if case .differs = single.check(headers: [:], etag: "\"00000000000000000000000000000000\"") {} else { Issue.record("an MD5 ETag that differs") }
        // Not an MD5 (SSE-KMS, other stores) and no checksum: nothing proven.
        #expect(single.check(headers: [:], etag: "\"abc\"") == .absent)
        // The checksum decides before the ETag, both ways.
        let checksum = Data(sha).base64EncodedString()
        #expect(single.check(headers: ["x-amz-checksum-sha256": checksum], etag: "\"abc\"") == .matches(figure: "sha256:" + checksum))
        if case .differs = single.check(headers: ["x-amz-checksum-sha256": Data(md5 + md5).base64EncodedString()],
                                         etag: "\"5d41402abc4b2a76b9719d911017c592\"") {} else { Issue.record("a checksum that differs") }

        // Multipart: the MD5 of the parts' MD5s, then -N.
        let parts = [Array("hel".utf8), Array("lo".utf8)]
        let multi = try S3StoreProof(partMD5s: parts.map { try MD5.digest($0) }, partSHA256s: parts.map { try SHA256.digest($0) })
        let expected = SHA256.hex(try MD5.digest(parts.flatMap { try MD5.digest($0) })) + "-2"
        #expect(multi.expectedETag == expected)
        #expect(multi.check(headers: [:], etag: "\"\(expected)\"") == .matches(figure: "etag:" + expected))
        if case .differs = multi.check(headers: [:], etag: "\"5d41402abc4b2a76b9719d911017c592-2\"") {} else { Issue.record("a multipart ETag that differs") }
        #expect(multi.check(headers: [:], etag: "\"5d41402abc4b2a76b9719d911017c592\"") == .absent)
    }
}
