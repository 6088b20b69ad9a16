import AssetStore
import Drain
import FaultProxy
import Foundation
import Testing
@testable import Transfer

/// Upload jobs to S3 through `JobPerformer`: the multipart checkpoint survives in the job row
/// (`resume_url` holds its JSON), a retried job resumes the same upload, and a cancelled job
/// aborts it.
@Suite struct S3JobTests {
    /// A library with one 11 MiB photo, analysed, and a job for it claimed.
    struct Library {
        let root: URL
        let store: AssetStore
        let file: TestFile
        let job: UploadJob

        init(destination: String) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("s3jobs-\(UUID().uuidString)")
            let library = root.appendingPathComponent("library")
            try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
            let made = try TestFile(size: S3MultipartTests.size, seed: 60, name: "IMG_0060.jpg")
            let path = library.appendingPathComponent("IMG_0060.jpg").path
            try FileManager.default.moveItem(atPath: made.path, toPath: path)
            made.remove()
            file = TestFile(existing: path, bytes: made.bytes)
            store = try AssetStore(root: library.path, path: root.appendingPathComponent("store.sqlite").path)
            _ = try store.scan()
            let asset = try #require(try store.assets().first)
            let sha = try FileDigest.sha256Hex(path: path)
            _ = try store.bankVerdict(BankedVerdict(json: #"{"label":"keep","faces":[]}"#, label: "keep", faceCount: 0,
                                                    score: 0.9, sha256: sha), for: asset)
            let analysed = try #require(try store.assets().first)
            _ = try #require(try store.createJob(for: analysed, destination: destination, inflightLimit: 10))
            job = try #require(try store.claimJobsToPerform(limit: 1).first)
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    /// The first attempt dies in part 2, leaving the upload id and part 1's ETag in the job row.
    static func failInPartTwo(_ library: Library, moto: MotoServer, bucket: S3Uploader) async throws -> UploadJob {
        let proxy = try FaultProxy(targetPort: moto.port, plan: FaultPlan { index in
            index == 2 ? .cut(afterBytes: 1024 * 1024, direction: .upstream) : nil
        })
        defer { proxy.stop() }
        let throughProxy = S3Uploader(configuration: try moto.configuration(bucket: bucket.configuration.bucket, port: proxy.port))
        let outcome = await JobPerformer(store: library.store, uploader: throughProxy).perform(library.job)
        guard case .finished(.failed(_, _, let failure, _)) = outcome else {
            Issue.record("expected a failed job, got \(outcome)")
            throw MotoError("unexpected outcome")
        }
        #expect(failure.transient)
        let failed = try #require(try library.store.jobs(for: .retry).first)
        let stored = try #require(failed.resumeURL)
        #expect(stored.hasPrefix("{"))
        let checkpoint = try #require(bucket.checkpoint(restoring: stored, confirmedOffset: failed.confirmedOffset))
        #expect(checkpoint.parts?.count == 1)
        #expect(failed.confirmedOffset == Int64(S3MultipartTests.part))
        return failed
    }

    @Test func retriedJobResumesTheSameMultipartUpload() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let library = try Library(destination: bucket.endpoint)
        defer { library.remove() }
        let failed = try await Self.failInPartTwo(library, moto: moto, bucket: bucket)
        #expect(try await S3MultipartTests.openUploads(bucket) == 1)

        _ = try #require(try library.store.retryJob(failed, update: .failure(attempts: 1, message: "cut", terminal: false), inflightLimit: 10))
        let again = try #require(try library.store.claimJobsToPerform(limit: 1).first)
        #expect(again.resumeURL == failed.resumeURL)
        let outcome = await JobPerformer(store: library.store, uploader: bucket).perform(again)
        guard case .finished(.succeeded(let status, let serverIDGiven, _, _, _)) = outcome else {
            Issue.record("expected success, got \(outcome)")
            return
        }
        #expect(status == 200)
        // Had it started over, the first upload id would still be open.
        #expect(try await S3MultipartTests.openUploads(bucket) == 0)
        let serverID = try #require(serverIDGiven)
        let key = String(serverID.prefix { $0 != " " })
        #expect(key == "photos/\(try FileDigest.sha256Hex(path: library.file.path))-IMG_0060.jpg")
        #expect(serverID.hasSuffix("-3"))
        let object = try await bucket.send("GET", key: key)
        #expect(object.body == library.file.bytes)
        #expect(object.headers[S3Metadata.verdictHeader] == #"{"label":"keep","faces":[]}"#)
    }

    @Test func cancelledJobAbortsTheMultipartUpload() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let library = try Library(destination: bucket.endpoint)
        defer { library.remove() }
        let failed = try await Self.failInPartTwo(library, moto: moto, bucket: bucket)
        _ = try #require(try library.store.retryJob(failed, update: .failure(attempts: 1, message: "cut", terminal: false), inflightLimit: 10))
        let again = try #require(try library.store.claimJobsToPerform(limit: 1).first)
        #expect(try await S3MultipartTests.openUploads(bucket) == 1)

        try FileManager.default.removeItem(atPath: library.file.path)  // the photo is gone
        let outcome = await JobPerformer(store: library.store, uploader: bucket).perform(again)
        guard case .cancelled = outcome else {
            Issue.record("expected a cancelled job, got \(outcome)")
            return
        }
        #expect(try await S3MultipartTests.openUploads(bucket) == 0)
    }
}
