import FaultProxy
import Foundation
import Synchronization
import Testing
@testable import Transfer

/// Multipart uploads against moto: 11 MiB files in 5 MiB parts (5 + 5 + 1 MiB), interrupted at
/// several points and resumed with ListParts, cancelled with AbortMultipartUpload.
@Suite struct S3MultipartTests {
    static let size = 11 * 1024 * 1024
    static let part = 5 * 1024 * 1024

    /// Saves every checkpoint, as a job row would, and remembers the last.
    final class CheckpointLog: Sendable {
        private let saved = Mutex<[UploadCheckpoint]>([])
        var all: [UploadCheckpoint] { saved.withLock { $0 } }
        var last: UploadCheckpoint? { saved.withLock { $0.last } }
        func save(_ checkpoint: UploadCheckpoint) { saved.withLock { $0.append(checkpoint) } }
    }

    /// The bucket's unfinished multipart uploads (ListMultipartUploads).
    static func openUploads(_ uploader: S3Uploader) async throws -> Int {
        let response = try await uploader.send("GET", key: nil, query: [("uploads", "")])
        #expect(response.status == 200)
        return S3XML.elements("Upload", in: Substring(String(decoding: response.body, as: UTF8.self))).count
    }

    /// GETs the object back and compares it with the file.
    static func expectStored(_ file: TestFile, receipt: UploadReceipt, uploader: S3Uploader) async throws {
        let key = try #require(receipt.location.flatMap { uploader.configuration.key(fromObjectURI: $0) })
        let object = try await uploader.send("GET", key: key)
        #expect(object.status == 200)
        #expect(object.body.count == file.bytes.count)
        #expect(object.body == file.bytes)
        #expect(receipt.serverID?.hasPrefix(key + " ") == true)
        #expect(receipt.serverID?.hasSuffix("-3") == true)  // a multipart ETag names its part count
    }

    @Test func uploadsInPartsCheckpointingEachETag() async throws {
        let moto = try await MotoServer.shared()
        let uploader = try await moto.makeBucket()
        let file = try TestFile(size: Self.size, seed: 10)
        defer { file.remove() }
        let log = CheckpointLog()
        let verdict = #"{"label":"keep","faces":[]}"#
        let receipt = try await uploader.upload(file: file.path, metadata: try UploadMetadata(file: file.path, verdictJSON: verdict),
                                                checkpoint: { log.save($0) })
        try await Self.expectStored(file, receipt: receipt, uploader: uploader)
        #expect(receipt.resumable)
        #expect(receipt.bytesSent >= Int64(Self.size))
        // The upload id first (no parts yet), then one more part each time, with its ETag.
        #expect(log.all.map { $0.parts?.count ?? -1 } == [0, 1, 2, 3])
        #expect(log.all.map(\.offset) == [0, Int64(Self.part), Int64(2 * Self.part), Int64(Self.size)])
        #expect(Set(log.all.compactMap(\.uploadID)).count == 1)
        #expect(log.last?.parts?.allSatisfy { $0.etag.count == 34 && $0.etag.hasPrefix("\"") } == true)
        let key = try #require(receipt.location.flatMap { uploader.configuration.key(fromObjectURI: $0) })
        #expect(try await uploader.send("HEAD", key: key).headers[S3Metadata.verdictHeader] == verdict)
        #expect(try await Self.openUploads(uploader) == 0)
    }

    /// One interruption: which connection (one per request: 0 create, 1-3 the parts, 4 complete)
    /// is cut after how many bytes which way, the parts the checkpoint then holds, the most bytes
    /// the resumed call may send, and the unfinished uploads S3 keeps afterwards.
    struct Cut: Sendable, CustomTestStringConvertible {
        let connection: Int
        let afterBytes: Int
        let direction: Fault.Direction
        let partsSaved: Int
        let resend: Int
        let orphans: Int
        var testDescription: String { "cut \(direction.rawValue) on request \(connection) after \(afterBytes) bytes" }
    }

    static let mib = 1024 * 1024
    static let cuts: [Cut] = [
        // CreateMultipartUpload's request never arrives: nothing to resume, start afresh.
        Cut(connection: 0, afterBytes: 200, direction: .upstream, partsSaved: 0, resend: size, orphans: 0),
        // S3 created the upload but its answer was lost: no id was saved, so it stays an orphan
        // for a lifecycle rule (AbortIncompleteMultipartUpload) to collect; the file is sent afresh.
        Cut(connection: 0, afterBytes: 20, direction: .downstream, partsSaved: 0, resend: size, orphans: 1),
        Cut(connection: 1, afterBytes: 3 * mib, direction: .upstream, partsSaved: 0, resend: size, orphans: 0),
        Cut(connection: 2, afterBytes: mib, direction: .upstream, partsSaved: 1, resend: size - part, orphans: 0),
        // Part 2 arrived but its ETag was lost: ListParts finds it, so only part 3 is sent.
        Cut(connection: 2, afterBytes: 20, direction: .downstream, partsSaved: 1, resend: size - 2 * part, orphans: 0),
        Cut(connection: 3, afterBytes: mib / 2, direction: .upstream, partsSaved: 2, resend: size - 2 * part, orphans: 0),
        Cut(connection: 4, afterBytes: 100, direction: .upstream, partsSaved: 3, resend: 0, orphans: 0),
        // S3 completed the object but the answer was lost: ListParts says NoSuchUpload, and a HEAD
        // finds the object with this content hash, so nothing is sent again.
        Cut(connection: 4, afterBytes: 20, direction: .downstream, partsSaved: 3, resend: 0, orphans: 0),
    ]

    /// The interrupted call throws a transient error; a second call by a new uploader (as after a
    /// restart) resumes from the stored checkpoint via ListParts and sends only what S3 lacks.
    @Test(arguments: cuts)
    func resumesAfterACutConnection(cut: Cut) async throws {
        let moto = try await MotoServer.shared()
        let direct = try await moto.makeBucket()
        let proxy = try FaultProxy(targetPort: moto.port, plan: FaultPlan { index in
            index == cut.connection ? .cut(afterBytes: cut.afterBytes, direction: cut.direction) : nil
        })
        defer { proxy.stop() }
        let throughProxy = S3Uploader(configuration: try moto.configuration(bucket: direct.configuration.bucket, port: proxy.port))
        let file = try TestFile(size: Self.size, seed: UInt64(20 + cut.connection))
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path, verdictJSON: "{}")
        let log = CheckpointLog()
        do {
            _ = try await throughProxy.upload(file: file.path, metadata: metadata, checkpoint: { log.save($0) })
            Issue.record("the cut upload succeeded; connections: \(proxy.connectionCount), faults: \(proxy.injectedFaults)")
            return
        } catch {
            #expect(error.isTransient, "\(error)")
        }
        #expect(proxy.injectedFaults.count == 1)
        #expect((log.last?.parts?.count ?? 0) == cut.partsSaved)

        // A new uploader (another process) resumes from what a job row would hold.
        let restarted = S3Uploader(configuration: direct.configuration)
        let resume = log.last.flatMap { restarted.checkpoint(restoring: $0.storedForm, confirmedOffset: $0.offset) }
        #expect((resume == nil) == (cut.connection == 0))
        let receipt = try await restarted.upload(file: file.path, metadata: metadata, resumeFrom: resume, checkpoint: { log.save($0) })
        try await Self.expectStored(file, receipt: receipt, uploader: direct)
        #expect(receipt.bytesSent >= Int64(cut.resend))
        #expect(receipt.bytesSent <= Int64(cut.resend) + 4096)
        if let resume {
            #expect(Set(log.all.compactMap(\.uploadID)).count == 1)  // resumed, never started over
            // S3 may hold a part whose acknowledgement the cut lost: at least the saved ones.
            #expect((receipt.resumedFromOffset ?? -1) >= resume.offset)
        } else {
            #expect(receipt.resumedFromOffset == nil)
        }
        #expect(try await Self.openUploads(direct) == cut.orphans)
    }

    /// Retries inside one call: a cut creation is sent again, a cut part is re-checked with
    /// ListParts and sent again, and the call completes. Requests by connection: 0 create (cut),
    /// 1 create, 2 part 1, 3 part 2 (cut), 4 ListParts, 5 part 2, 6 part 3 (cut), 7 ListParts,
    /// 8 part 3, 9 complete (whose ETag and checksum are the proof: no HEAD follows).
    @Test func recoversWithinOneCall() async throws {
        let moto = try await MotoServer.shared()
        let direct = try await moto.makeBucket()
        let proxy = try FaultProxy(targetPort: moto.port, plan: FaultPlan { index in
            switch index {
            case 0: .cut(afterBytes: 200, direction: .upstream)
            case 3, 6: .cut(afterBytes: 512 * 1024, direction: .upstream)
            default: nil
            }
        })
        defer { proxy.stop() }
        let uploader = S3Uploader(configuration: try moto.configuration(bucket: direct.configuration.bucket, port: proxy.port, retries: 3))
        let file = try TestFile(size: Self.size, seed: 30)
        defer { file.remove() }
        let receipt = try await uploader.upload(file: file.path, metadata: try UploadMetadata(file: file.path))
        #expect(proxy.injectedFaults.count == 3)
        #expect(proxy.connectionCount == 10)
        try await Self.expectStored(file, receipt: receipt, uploader: direct)
        #expect(try await Self.openUploads(direct) == 0)
    }

    /// Cancelling the task stops after the current part; the upload stays resumable and the next
    /// call sends only the parts after it.
    @Test func cancelledTaskResumes() async throws {
        let moto = try await MotoServer.shared()
        let uploader = try await moto.makeBucket()
        let file = try TestFile(size: Self.size, seed: 40)
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path)
        let log = CheckpointLog()
        let task = Mutex<Task<Result<UploadReceipt, TransferError>, Never>?>(nil)
        let started = Task { () async -> Result<UploadReceipt, TransferError> in
            do throws(TransferError) {
                return .success(try await uploader.upload(file: file.path, metadata: metadata, checkpoint: { checkpoint in
                    log.save(checkpoint)
                    if checkpoint.parts?.count == 1 { task.withLock { $0?.cancel() } }
                }))
            } catch {
                return .failure(error)
            }
        }
        task.withLock { $0 = started }
        guard case .failure(let error) = await started.value else {
            Issue.record("the cancelled upload finished")
            return
        }
        #expect(error.code == .cancelled)
        #expect(error.classification == .deferred)
        let saved = try #require(log.last)
        #expect(saved.parts?.count == 1)
        let receipt = try await uploader.upload(file: file.path, metadata: metadata, resumeFrom: saved)
        try await Self.expectStored(file, receipt: receipt, uploader: uploader)
        #expect(receipt.bytesSent <= Int64(Self.size - Self.part) + 4096)
    }

    /// `cancel` aborts the multipart upload: no orphan remains, ListParts says NoSuchUpload, and
    /// resuming the dead upload id starts over instead of retrying forever.
    @Test func cancelAbortsAndADeadUploadStartsOver() async throws {
        let moto = try await MotoServer.shared()
        let uploader = try await moto.makeBucket()
        let file = try TestFile(size: Self.size, seed: 50)
        defer { file.remove() }
        let metadata = try UploadMetadata(file: file.path)
        let log = CheckpointLog()
        let outcome: Result<UploadReceipt, TransferError>
        do throws(TransferError) {
            outcome = .success(try await uploader.upload(file: file.path, metadata: metadata, checkpoint: { checkpoint in
                log.save(checkpoint)
                if checkpoint.parts?.count == 1 { throw MotoError("stop here") }
            }))
        } catch {
            outcome = .failure(error)
        }
        guard case .failure(let error) = outcome else {
            Issue.record("the upload did not stop at its checkpoint")
            return
        }
        #expect(error.code == .checkpointFailed)
        let saved = try #require(log.all.last { $0.parts?.count == 1 })
        let uploadID = try #require(saved.uploadID)
        #expect(try await Self.openUploads(uploader) == 1)

        try await uploader.cancel(saved)
        #expect(try await Self.openUploads(uploader) == 0)
        let key = try #require(uploader.configuration.key(fromObjectURI: saved.location))
        let listing = try await uploader.send("GET", key: key, query: [("uploadId", uploadID)])
        #expect(listing.status == 404)
        #expect(S3Failure.errorCode(in: listing.body) == "NoSuchUpload")
        try await uploader.cancel(saved)  // already gone: still fine

        let fresh = CheckpointLog()
        let receipt = try await uploader.upload(file: file.path, metadata: metadata, resumeFrom: saved, checkpoint: { fresh.save($0) })
        try await Self.expectStored(file, receipt: receipt, uploader: uploader)
        #expect(fresh.all.first?.uploadID != uploadID)
        #expect(receipt.resumedFromOffset == nil, "an upload started over was reported as resumed")
        #expect(try await Self.openUploads(uploader) == 0)
    }
}
