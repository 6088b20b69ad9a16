import AssetStore
import Foundation
import SystemSupport
import Testing
@testable import Drain

/// The stop rule (`StopGrace`) as the runner keeps it: after a stop nothing new starts, an
/// analysis in flight that finishes within the grace is banked, and one that does not is left
/// (the run returns once the grace is over).
@Suite struct StopGraceRunTests {
    @Test func analysesInFlightFinishWithinTheGraceAndAreBanked() async throws {
        let library = try Library(photos: 4)
        let store = try library.store()
        _ = try store.scan()
        let analyzer = CountingAnalyzer(delay: .milliseconds(400))
        let runner = AnalyzeRunner(store: store, analyzer: analyzer, options: AnalyzeOptions(slots: 2, pageSize: 4))
        let stopper = Task {
            try await Task.sleep(for: .milliseconds(100))
            runner.stop(.interrupted(signal: 15))
        }
        let outcome = await runner.run { _ in }
        try await stopper.value
        #expect(outcome == .interrupted(signal: 15))
        #expect(analyzer.total == 2, "the two in flight, nothing after the stop")
        #expect(try store.unanalyzedCount() == 2)
    }

    @Test func anAnalysisPastTheGraceIsLeftAndTheRunReturns() async throws {
        let library = try Library(photos: 1)
        let store = try library.store()
        _ = try store.scan()
        let runner = AnalyzeRunner(store: store, analyzer: CountingAnalyzer(delay: .seconds(20)), options: AnalyzeOptions(slots: 1, pageSize: 1))
        let stopper = Task {
            try await Task.sleep(for: .milliseconds(100))
            runner.stop(.interrupted(signal: 15))
        }
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = await runner.run { _ in }
        let took = clock.now - start
        try await stopper.value
        #expect(outcome == .interrupted(signal: 15))
        // Long before the analysis would end. (Not to the millisecond: suites that analyse real
        // photos in a debug build can hold Swift's cooperative threads for seconds meanwhile.)
        #expect(took >= StopGrace.inFlight && took < .seconds(15), "\(took)")
        #expect(try store.unanalyzedCount() == 1)
        // The abandoned analysis still runs on its own thread; the process would wait for it (`OwnThreads`).
        #expect(OwnThreads.count >= 1)
    }
}
