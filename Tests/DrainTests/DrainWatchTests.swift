import AssetStore
import Foundation
import Synchronization
import Testing
import Transfer
@testable import Drain

/// A watching drain (`DrainOptions.watch`) does not end when nothing is left,
/// nor when the destination stays away; what the watches miss (past the watch limit) the rescans find.
@Suite struct DrainWatchTests {
    /// A watching runner on its own task, and the events it reported.
    final class Watching: Sendable {
        let runner: DrainRunner
        let task: Task<DrainOutcome, Never>
        let log = EventLog()

        final class EventLog: Sendable {
            let events = Mutex<[DrainEvent]>([])
        }

        init(store: AssetStore, destination: any UploadDestination, configure: (inout DrainOptions) -> Void) {
            var options = DrainOptions(destination: destination)
            options.slots = 1
            options.watch = true
            options.quietPeriod = .zero
            configure(&options)
            let runner = DrainRunner(store: store, analyzer: CountingAnalyzer(), options: options)
            let log = self.log
            self.runner = runner
            task = Task { await runner.run { event in log.events.withLock { $0.append(event) } } }
        }

        /// Waits up to `seconds` for an event `matching`.
        /// A guard against a hang, not a timing bar: on a loaded machine (2 cores, compilers
        /// running) the first events of a run have taken over 10 s.
        func waitFor(seconds: Double = 30, _ matching: (DrainEvent) -> Bool) async -> Bool {
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while ContinuousClock.now < deadline {
                if log.events.withLock({ $0.contains(where: matching) }) { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return false
        }

        func stop() async -> DrainOutcome {
            runner.stop(signal: SIGTERM)
            return await task.value
        }
    }

    @Test func aFolderPastTheWatchLimitIsFoundByTheRescans() async throws {
        let library = try Library(photos: 1)
        let deep = library.root.appendingPathComponent("photos/deep")
        try FileManager.default.createDirectory(at: deep, withIntermediateDirectories: true)
        let watching = Watching(store: try library.store(), destination: ScriptedDestination(uploads: [])) { options in
            options.watchLimit = 1  // the library folder only
            options.rescanInterval = .milliseconds(300)
        }
        #expect(await watching.waitFor { if case .watching(1, let limited?) = $0 { limited.contains("watch limit") } else { false } })
        try Data("new".utf8).write(to: deep.appendingPathComponent("new.jpg"))
        #expect(await watching.waitFor { if case .uploaded("deep/new.jpg", _, _) = $0 { true } else { false } })
        #expect(await watching.stop() == .interrupted(signal: SIGTERM))
    }

    @Test func anUnreachableDestinationDoesNotEndAWatchingRun() async throws {
        let library = try Library(photos: 1)
        let store = try library.store()
        let away = ScriptedDestination(uploads: [], awayForChecks: .max)
        let watching = Watching(store: store, destination: away) { options in
            options.offlineGiveUp = .milliseconds(100)
            options.probeInterval = .milliseconds(50)
            options.maxProbeInterval = .milliseconds(100)
        }
        #expect(await watching.waitFor { if case .offline = $0 { true } else { false } })
        try await Task.sleep(for: .seconds(1))  // ten times --offline-timeout
        #expect(await watching.stop() == .interrupted(signal: SIGTERM))
        let counts = try store.counts()
        #expect(counts.analyzed == 1 && counts.failed == 0)
    }
}
