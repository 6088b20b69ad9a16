import Foundation
import PhotoAnalysis
import Synchronization
import Testing
import Transfer
@testable import AssetStore
@testable import Drain
@testable import FaceAnalysis

/// A destination that keeps the metadata each upload was sent with and sends nothing.
final class RecordingDestination: UploadDestination {
    let endpoint = "http://recording.invalid/uploads"
    let sent = Mutex<[UploadMetadata]>([])

    func upload(file path: String, metadata: UploadMetadata, resumeFrom: UploadCheckpoint?,
                progress: @escaping (UploadProgress) -> Void,
                checkpoint: @escaping (UploadCheckpoint) throws -> Void) async throws(TransferError) -> UploadReceipt {
        sent.withLock { $0.append(metadata) }
        return UploadReceipt(serverID: "id-\(metadata.filename)", status: 201, headers: [:], bytesSent: 1, location: nil, resumable: false)
    }

    func cancel(_ checkpoint: UploadCheckpoint) async throws(TransferError) {}
    func checkReachable() async throws(TransferError) {}
    func checkpoint(restoring stored: String, confirmedOffset: Int64) -> UploadCheckpoint? { nil }
}

/// What an upload says of a photo comes from what analysis banked: the upload stage never opens
/// the photo to read its metadata (a row analysed before capture dates were banked reads it once).
@Suite struct BankedCaptureDateTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// A JPEG whose EXIF says it was taken at 2021:03:04 05:06:07.
    static let dated = repository.appendingPathComponent("Tests/PhotoDecodingTests/Fixtures/capture-date.jpg")
    static let taken = "2021:03:04 05:06:07"
    /// The modification time the photo keeps, rewritten or not, so the store takes it as unchanged.
    static let mtime = Date(timeIntervalSince1970: 1_600_000_000)

    /// A library of one dated photo and its store, scanned.
    static func library() throws -> (library: Library, store: AssetStore, path: String) {
        let library = try Library(photos: 0)
        let path = library.root.appendingPathComponent("photos/dated.jpg").path
        try FileManager.default.copyItem(atPath: dated.path, toPath: path)
        try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: path)
        let store = try library.store()
        _ = try store.scan()
        return (library, store, path)
    }

    /// Performs the one upload job of `store`'s one analysed photo.
    static func upload(_ store: AssetStore, to destination: RecordingDestination) async throws -> PerformOutcome {
        let claimed = try #require(try store.claimForUpload(limit: 1).first)
        _ = try #require(try store.createJob(for: claimed, destination: destination.endpoint, inflightLimit: .max))
        let job = try #require(try store.claimJobsToPerform(limit: 1).first)
        return await JobPerformer(store: store, uploader: destination).perform(job)
    }

    /// The photo analysed by the real pipeline, then replaced by garbage of the same size and time
    /// (a reader that opened it would find no date, no verdict, another digest): its upload still
    /// carries the capture date, verdict, summary and digest analysis banked.
    @Test func anUploadSendsWhatAnalysisBankedWithoutOpeningThePhoto() async throws {
        let (library, store, path) = try Self.library()
        defer { withExtendedLifetime(library) {} }
        let models = Self.repository.appendingPathComponent("Models")
        let pipeline = try FacePipeline(settings: AnalysisSettings(modelPath: models.appendingPathComponent(AnalysisSettings.verdictModelFile).path,
                                                                   networkPath: models.appendingPathComponent(AnalysisSettings.networkFile).path))
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        guard case .verdict(let analysed) = pipeline.analyze(path: path, memoryBudget: nil) else {
            Issue.record("deferred with no memory limit")
            return
        }
        #expect(analysed.captureDate == Self.taken && analysed.format == .jpeg && analysed.sha256 != nil)
        #expect(try store.bankVerdict(analysed, for: asset))
        let banked = try #require(try store.asset(path: "dated.jpg"))
        #expect(banked.captureDateBanked && banked.captureDate == Self.taken)

        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        try Data(repeating: 0x5A, count: size).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.modificationDate: Self.mtime], ofItemAtPath: path)
        // The garbage's change time tells it from the photo (store migration 10): the store is
        // made to take it for the version analysed, so the upload goes ahead and whatever it
        // sends can only come from what analysis banked.
        #expect(!store.fileMatches(banked))
        let stamp = try #require(FileTree.fileState(bytes: Array(path.utf8))?.stamp)
        _ = try Database(path: store.path).run("UPDATE assets SET ctime_ns = ?, inode = ?, device = ?", stamp.values)
        #expect(store.fileMatches(banked))

        let destination = RecordingDestination()
        guard case .finished(.succeeded) = try await Self.upload(store, to: destination) else {
            Issue.record("the upload did not succeed")
            return
        }
        let sent = try #require(destination.sent.withLock { $0.first })
        #expect(sent.provenance?.dateTimeOriginal == Self.taken)
        #expect(sent.verdictJSON == banked.verdictJSON && sent.sha256Hex == banked.sha256)
        #expect(sent.verdictSummaryJSON == (try analysed.verdict.summaryJSON()))
    }

    /// A row analysed before capture dates were banked: its first upload reads the date from the
    /// file's metadata and banks it, so no later upload of it opens the file for it.
    @Test func aRowAnalysedBeforeDatesWereBankedReadsItOnce() async throws {
        let (library, store, _) = try Self.library()
        defer { withExtendedLifetime(library) {} }
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        #expect(try store.bankVerdict(BankedVerdict(json: "{}", label: "no-faces", faceCount: 0, score: 0, sha256: "ab"), for: asset))
        // As migration 8 leaves a row analysed before it: no date read.
        _ = try Database(path: library.root.appendingPathComponent("store.sqlite").path).run("UPDATE assets SET capture_date = NULL")
        #expect(try store.asset(path: "dated.jpg")?.captureDateBanked == false)

        let destination = RecordingDestination()
        guard case .finished(.succeeded) = try await Self.upload(store, to: destination) else {
            Issue.record("the upload did not succeed")
            return
        }
        #expect(destination.sent.withLock { $0.first?.provenance?.dateTimeOriginal } == Self.taken)
        let read = try #require(try store.asset(path: "dated.jpg"))
        #expect(read.captureDateBanked && read.captureDate == Self.taken)
    }
}
