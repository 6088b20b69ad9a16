import AssetStore
import Foundation
import Testing
@testable import Drain

/// Photos added while `analyze` runs are analysed in the same run, by the drain's rescan rule.
@Suite struct AnalyzeRescanTests {
    /// The analyser copies a new photo into the library while it analyses the first one: the file
    /// arrives after the run's first scan.
    private func analyse(rescanInterval: Duration?, quietPeriod: Duration = .seconds(2)) async throws -> (AnalyzeOutcome, AssetStore, Library) {
        let library = try Library(photos: 2)
        let folder = library.root.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("late"), withIntermediateDirectories: true)
        let store = try library.store()
        _ = try store.scan()
        var options = AnalyzeOptions(slots: 1, pageSize: 1)
        options.rescanInterval = rescanInterval
        options.quietPeriod = quietPeriod
        let outcome = await AnalyzeRunner(store: store, analyzer: DrainRescanTests.AddingAnalyzer(folder: folder), options: options).run { _ in }
        return (outcome, store, library)
    }

    @Test func aPhotoAddedDuringTheRunIsAnalysedBeforeItEnds() async throws {
        let (outcome, store, library) = try await analyse(rescanInterval: .seconds(10))
        defer { withExtendedLifetime(library) {} }
        #expect(outcome == .finished)
        let late = try #require(try store.asset(path: "late/new.jpg"))
        #expect(late.analyzedAt != nil)
        #expect(try store.unanalyzedCount() == 0)
        #expect(try store.counts().analyzed == 3)
    }

    /// A rescan due before every page (an interval of zero) finds it while pages remain (taken
    /// as it is: no quiet period), and the run still ends: a scan waits for a page between.
    @Test func aRescanBeforeEachPageFindsIt() async throws {
        let (outcome, store, library) = try await analyse(rescanInterval: .zero, quietPeriod: .zero)
        defer { withExtendedLifetime(library) {} }
        #expect(outcome == .finished)
        #expect(try store.counts().analyzed == 3)
    }

    @Test func withRescansOffOnlyTheFirstScanCounts() async throws {
        let (outcome, store, library) = try await analyse(rescanInterval: nil)
        defer { withExtendedLifetime(library) {} }
        #expect(outcome == .finished)
        #expect(try store.asset(path: "late/new.jpg") == nil)
        #expect(try store.counts().analyzed == 2)
    }
}
