import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization
import Testing
@testable import Drain

/// A stand-in analyser whose photos need set amounts of memory: it analyses a photo when the
/// budget holds its need and defers it otherwise, as `FacePipeline` does, and records the budget
/// and the other analyses in flight at each call.
final class HungryAnalyzer: PhotoAnalyzing {
    let needs: [String: Int]
    let otherwise: Int
    /// The calls in flight, each with whether another call overlapped it.
    private let active = Mutex<[UUID: Bool]>([:])
    /// Per photo name: the budget of each call, and whether another analysis ran beside it.
    let calls = Mutex<[String: [(budget: Int?, overlapped: Bool)]]>([:])

    init(needs: [String: Int], otherwise: Int) {
        self.needs = needs
        self.otherwise = otherwise
    }

    func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
        let name = (path as NSString).lastPathComponent
        let id = UUID()
        active.withLock { calls in
            for other in calls.keys { calls[other] = true }
            calls[id] = !calls.isEmpty
        }
        Thread.sleep(forTimeInterval: 0.02)  // long enough for the other slots to overlap
        let overlapped = active.withLock { $0.removeValue(forKey: id) ?? false }
        calls.withLock { $0[name, default: []].append((memoryBudget, overlapped)) }
        let need = needs[name] ?? otherwise
        if let memoryBudget, need > memoryBudget {
            return .deferred(reason: "\(name) needs \(need >> 20) MiB", needs: need)
        }
        return .verdict(.noFaces)
    }

    func calls(_ name: String) -> [(budget: Int?, overlapped: Bool)] { calls.withLock { $0[name] ?? [] } }

    /// How often the runner asked for idle memory back.
    let released = Mutex(0)
    func releaseIdleMemory() { released.withLock { $0 += 1 } }
}

/// A photo whose analysis does not fit a slot's share of the
/// memory headroom is analysed alone with all of it (never smaller); one that does not fit even
/// then stays unanalysed and the run goes on with the others, reporting what it needs.
@Suite struct MemoryDeferralTests {
    static let mib = 1 << 20
    static let headroom = 100 * mib
    /// This process's resident set reads as 40 MiB (`FakeSystem`); no reserve: the headroom is exact.
    static let memory = MemoryGuard(configuredLimit: (40 << 20) + headroom, reserve: 0, probe: FakeSystem().probe)
    /// p001 fits the headroom only alone; p003 never fits; the rest fit any share.
    static func analyzer() -> HungryAnalyzer {
        HungryAnalyzer(needs: ["p001.jpg": 80 * mib, "p003.jpg": 150 * mib], otherwise: 10 * mib)
    }

    static func expectAloneAndLeft(_ analyzer: HungryAnalyzer, store: AssetStore, slots: Int) throws {
        let alone = analyzer.calls("p001.jpg")
        #expect(alone.last?.budget == headroom && alone.last?.overlapped == false, "\(alone)")
        #expect(alone.count == (slots > 1 ? 2 : 1), "first within a slot's share, then alone: \(alone)")
        // What never fits is tried once within the share and once alone, no more.
        #expect(analyzer.calls("p003.jpg").count == 2, "\(analyzer.calls("p003.jpg"))")
        #expect(analyzer.calls("p003.jpg").last?.budget == headroom)
        #expect(analyzer.released.withLock { $0 } >= 1)
        #expect(try store.asset(path: "p001.jpg")?.analyzedAt != nil)
        #expect(try store.asset(path: "p003.jpg")?.analyzedAt == nil)
        #expect(try store.unanalyzedCount() == 1)
    }

    @Test(arguments: [3, 1])
    func analyzeRunner(slots: Int) async throws {
        let library = try Library(photos: 6)
        let store = try library.store()
        _ = try store.scan()
        let analyzer = Self.analyzer()
        let runner = AnalyzeRunner(store: store, analyzer: analyzer, options: AnalyzeOptions(slots: slots, pageSize: 10), memory: Self.memory)
        let deferred = Mutex<[String]>([])
        let outcome = await runner.run { event in
            if case .deferred(let path, _) = event { deferred.withLock { $0.append(path) } }
        }
        #expect(outcome == .memoryExhausted)
        #expect(deferred.withLock { $0 } == ["p003.jpg"])
        #expect(runner.memoryDeferrals.count == 1 && runner.memoryDeferrals.smallestNeed == 150 * Self.mib)
        try Self.expectAloneAndLeft(analyzer, store: store, slots: slots)
        // The claim went back: the next run (with more memory) takes the photo.
        #expect(try store.claimUnanalyzed(limit: 10).map(\.path) == ["p003.jpg"])
    }

    @Test(arguments: [3, 1])
    func drainRunner(slots: Int) async throws {
        let library = try Library(photos: 6)
        let store = try library.store()
        var options = DrainOptions(destination: ScriptedDestination(uploads: []))
        options.slots = slots
        options.bias = .analysisFirst
        options.rescanInterval = nil
        let analyzer = Self.analyzer()
        let runner = DrainRunner(store: store, analyzer: analyzer, options: options, memory: Self.memory)
        let outcome = await runner.run { _ in }
        #expect(outcome == .finished)
        #expect(runner.memoryDeferrals.count == 1 && runner.memoryDeferrals.smallestNeed == 150 * Self.mib)
        try Self.expectAloneAndLeft(analyzer, store: store, slots: slots)
        #expect(try store.counts().uploaded == 5)
    }

    @Test func wakeGoesOnPastAPhotoThatDoesNotFit() async throws {
        let library = try Library(photos: 6)
        let store = try library.store()
        let analyzer = Self.analyzer()
        let report = try await WakeRunner(store: store, analyzer: analyzer, memory: Self.memory,
                                    options: WakeOptions(destination: "http://127.0.0.1:9/uploads")).runOnOwnThread()
        #expect(report.analysed == 5)
        #expect(report.memoryDeferrals.count == 1)
        #expect(report.bailed == "1 photo left for later (p003.jpg needs 150 MiB)", "\(report.bailed ?? "nil")")
        #expect(report.workRemains && report.progressing)
        #expect(try store.asset(path: "p003.jpg")?.analyzedAt == nil)
        #expect(analyzer.calls("p003.jpg").count == 2 && analyzer.released.withLock { $0 } == 1)
    }
}
