import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization
import Testing
@testable import Drain

/// A stand-in analyser that records every call and can be slowed down.
final class CountingAnalyzer: PhotoAnalyzing {
    let calls = Mutex<[String: Int]>([:])
    let delay: Duration

    init(delay: Duration = .zero) { self.delay = delay }

    func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
        calls.withLock { $0[path, default: 0] += 1 }
        if delay > .zero { Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18) }
        return .verdict(.noFaces)
    }

    var total: Int { calls.withLock { $0.values.reduce(0, +) } }
    var maxPerPhoto: Int { calls.withLock { $0.values.max() ?? 0 } }
}

final class Library {
    let root: URL
    init(photos: Int) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("pd-drain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("photos"), withIntermediateDirectories: true)
        for i in 0..<photos {
            try Data("photo \(i)".utf8).write(to: root.appendingPathComponent(String(format: "photos/p%03d.jpg", i)))
        }
    }
    deinit { try? FileManager.default.removeItem(at: root) }
    func store() throws -> AssetStore {
        try AssetStore(root: root.appendingPathComponent("photos").path, path: root.appendingPathComponent("store.sqlite").path)
    }
}

@Suite struct AnalyzeRunnerTests {
    @Test func banksAVerdictForEveryPhotoOnce() async throws {
        let library = try Library(photos: 25)
        let store = try library.store()
        _ = try store.scan()
        let analyzer = CountingAnalyzer()
        let banked = Mutex(0)
        let runner = AnalyzeRunner(store: store, analyzer: analyzer, options: AnalyzeOptions(slots: 2, pageSize: 4))
        let outcome = await runner.run { event in
            if case .verdict(_, _, true, _) = event { banked.withLock { $0 += 1 } }
        }
        #expect(outcome == .finished)
        #expect(analyzer.total == 25 && analyzer.maxPerPhoto == 1)
        #expect(banked.withLock { $0 } == 25)
        #expect(try store.counts().analyzed == 25)
        #expect(try store.unanalyzedCount() == 0)
    }

    @Test func twoRunnersOnOneStoreNeverAnalyseAPhotoTwice() async throws {
        let library = try Library(photos: 40)
        let first = try library.store()
        let second = try library.store()
        _ = try first.scan()
        let analyzer = CountingAnalyzer(delay: .milliseconds(2))
        let runners = [first, second].map { AnalyzeRunner(store: $0, analyzer: analyzer, options: AnalyzeOptions(slots: 2, pageSize: 3)) }
        await withTaskGroup(of: Void.self) { group in
            for runner in runners { group.addTask { _ = await runner.run { _ in } } }
        }
        #expect(analyzer.total == 40 && analyzer.maxPerPhoto == 1)
        #expect(try first.unanalyzedCount() == 0)
    }

    @Test func aStopLeavesTheRestForTheNextRun() async throws {
        let library = try Library(photos: 30)
        let store = try library.store()
        _ = try store.scan()
        let analyzer = CountingAnalyzer(delay: .milliseconds(20))
        let runner = AnalyzeRunner(store: store, analyzer: analyzer, options: AnalyzeOptions(slots: 2, pageSize: 5))
        let count = Mutex(0)
        let outcome = await runner.run { event in
            if case .verdict = event, count.withLock({ $0 += 1; return $0 }) == 4 { runner.stop(.interrupted(signal: 15)) }
        }
        #expect(outcome == .interrupted(signal: 15))
        let remaining = try store.unanalyzedCount()
        #expect(remaining > 0 && remaining < 30)
        // The claims of the stopped run were released: a new run takes every remaining photo now.
        let rerun = AnalyzeRunner(store: try library.store(), analyzer: analyzer, options: AnalyzeOptions(slots: 2, pageSize: 5))
        #expect(await rerun.run { _ in } == .finished)
        #expect(try store.unanalyzedCount() == 0)
        #expect(analyzer.maxPerPhoto == 1)
    }

    @Test func noProgressForTooLongExpires() async throws {
        let library = try Library(photos: 3)
        let store = try library.store()
        _ = try store.scan()
        let analyzer = CountingAnalyzer(delay: .milliseconds(600))
        let options = AnalyzeOptions(slots: 1, pageSize: 1, expireAfter: .milliseconds(200))
        let outcome = await AnalyzeRunner(store: store, analyzer: analyzer, options: options).run { _ in }
        #expect(outcome == .expired)
        #expect(try store.unanalyzedCount() > 0)
    }

    @Test func latchCompletesOnce() {
        let latch = OneShotLatch<Int>()
        #expect(latch.complete(1))
        #expect(!latch.complete(2))
        #expect(latch.value == 1)
    }
}

@Suite struct AnalyzeMemoryTests {
    @Test func noHeadroomStopsWithWorkRemaining() async throws {
        let library = try Library(photos: 5)
        let store = try library.store()
        _ = try store.scan()
        var system = FakeSystem()
        system.files["/proc/self/status"] = "VmRSS:\t 100000 kB\n"
        let tight = MemoryGuard(configuredLimit: 110 << 20, reserve: 8 << 20, probe: system.probe)
        let analyzer = CountingAnalyzer()
        let outcome = await AnalyzeRunner(store: store, analyzer: analyzer, options: AnalyzeOptions(), memory: tight).run { _ in }
        #expect(outcome == .memoryExhausted)
        #expect(analyzer.total == 0)
        #expect(try store.unanalyzedCount() == 5)
    }
}
