import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization
import Testing
import Transfer
@testable import Drain

/// Photos added while `drain` runs are picked up in the same run.
@Suite struct DrainRescanTests {
    /// A destination during whose first upload the photo is rewritten in place (same name, same
    /// size, as an editor saving over it), which then fails as a receiver refusing the digest would.
    final class RewritingDestination: UploadDestination {
        let endpoint = "http://rewriting.invalid/uploads"
        let calls = Mutex(0)
        let uploaded = Mutex<[String]>([])

        func upload(file path: String, metadata: UploadMetadata, resumeFrom: UploadCheckpoint?,
                    progress: @escaping (UploadProgress) -> Void,
                    checkpoint: @escaping (UploadCheckpoint) throws -> Void) async throws(TransferError) -> UploadReceipt {
            let call = calls.withLock { n -> Int in
                n += 1
                return n
            }
            if call == 1 {
                if let handle = FileHandle(forUpdatingAtPath: path) {
                    try? handle.write(contentsOf: Data("PHOTO".utf8))
                    try? handle.close()
                }
                throw TransferError(.rejected, "the body does not match Repr-Digest", httpStatus: 400)
            }
            uploaded.withLock { $0.append(metadata.sha256Hex) }
            return UploadReceipt(serverID: "id-\(call)", status: 201, headers: [:], bytesSent: 1, location: nil, resumable: false)
        }

        func cancel(_ checkpoint: UploadCheckpoint) async throws(TransferError) {}
        func checkReachable() async throws(TransferError) {}
        func checkpoint(restoring stored: String, confirmedOffset: Int64) -> UploadCheckpoint? { nil }
    }

    /// The folder's times do not move when a file in it is rewritten in place, so the
    /// incremental scan after the cancelled upload must be told to read it: else the photo would
    /// be claimed, found changed and cancelled for ever (until the next full walk).
    @Test func aPhotoRewrittenInPlaceDuringItsUploadIsAnalysedAndSentAgain() async throws {
        let library = try Library(photos: 1)
        defer { withExtendedLifetime(library) {} }
        var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, library.root.appendingPathComponent("photos").path, &times, 0) == 0)
        let store = try library.store()
        let destination = RewritingDestination()
        var options = DrainOptions(destination: destination)
        options.slots = 1
        options.rescanInterval = nil
        let runner = DrainRunner(store: store, analyzer: CountingAnalyzer(), options: options)
        let watchdog = Task {
            try await Task.sleep(for: .seconds(20))
            runner.stop(signal: SIGTERM)
        }
        let outcome = await runner.run { _ in }
        watchdog.cancel()
        #expect(outcome == .finished)
        let row = try #require(try store.asset(path: "p000.jpg"))
        #expect(row.uploadedAt != nil && row.generation == 1)
        #expect(destination.calls.withLock { $0 } == 2)
    }

    /// An analyser that copies a new photo into the library while it analyses the first one:
    /// the file arrives after the drain's first scan.
    final class AddingAnalyzer: PhotoAnalyzing {
        let folder: URL
        let added = Mutex(false)
        init(folder: URL) { self.folder = folder }

        func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
            let first = added.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            if first { try? Data("late photo".utf8).write(to: folder.appendingPathComponent("late/new.jpg")) }
            return .verdict(.noFaces)
        }
    }

    private func drain(rescanInterval: Duration?) async throws -> (DrainOutcome, AssetStore, Library) {
        let library = try Library(photos: 2)
        let folder = library.root.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("late"), withIntermediateDirectories: true)
        let store = try library.store()
        var options = DrainOptions(destination: ScriptedDestination(uploads: []))
        options.slots = 1
        options.rescanInterval = rescanInterval
        let outcome = await DrainRunner(store: store, analyzer: AddingAnalyzer(folder: folder), options: options).run { _ in }
        return (outcome, store, library)
    }

    @Test func aPhotoAddedDuringTheDrainIsUploadedInTheSameRun() async throws {
        let (outcome, store, library) = try await drain(rescanInterval: .seconds(10))
        defer { withExtendedLifetime(library) {} }
        #expect(outcome == .finished)
        let late = try #require(try store.asset(path: "late/new.jpg"))
        #expect(late.uploadedAt != nil)
        #expect(try store.counts().uploaded == 3)
    }

    /// A file that keeps changing (here: every file counts as changing, with an hour-long quiet
    /// period) does not hold the drain for ever: after the settle limit it stops, work remaining.
    @Test func aFileThatNeverSettlesEndsTheDrainWithWorkLeft() async throws {
        let library = try Library(photos: 2)
        defer { withExtendedLifetime(library) {} }
        let folder = library.root.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("late"), withIntermediateDirectories: true)
        let store = try library.store()
        var options = DrainOptions(destination: ScriptedDestination(uploads: []))
        options.slots = 1
        options.rescanInterval = .seconds(10)
        options.quietPeriod = .seconds(3600)
        options.settleLimit = .milliseconds(300)
        let runner = DrainRunner(store: store, analyzer: AddingAnalyzer(folder: folder), options: options)
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            runner.stop(signal: SIGTERM)
        }
        let outcome = await runner.run { _ in }
        watchdog.cancel()
        #expect(outcome == .stillChanging(paths: ["late/new.jpg"]))
        #expect(try store.asset(path: "late/new.jpg") == nil)
        #expect(try store.counts().uploaded == 2)
    }

    @Test func withRescansOffOnlyTheFirstScanCounts() async throws {
        let (outcome, store, library) = try await drain(rescanInterval: nil)
        defer { withExtendedLifetime(library) {} }
        #expect(outcome == .finished)
        #expect(try store.asset(path: "late/new.jpg") == nil)
        #expect(try store.counts().uploaded == 2)
    }
}
