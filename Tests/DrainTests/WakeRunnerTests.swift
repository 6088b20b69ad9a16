import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization
import SystemSupport
import Testing
@testable import Drain

/// An analyser that records, at each call, what the store's jobs looked like.
final class SnapshotAnalyzer: PhotoAnalyzing {
    let store: AssetStore
    let seen = Mutex<[(path: String, registered: [Int64?], finished: Int)]>([])

    init(store: AssetStore) { self.store = store }

    func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
        let registered = ((try? store.jobs(for: .process)) ?? []).map(\.assetID)
        let finished = ((try? store.jobs(for: .acknowledge)) ?? []).count
        seen.withLock { $0.append(((path as NSString).lastPathComponent, registered, finished)) }
        return .verdict(.noFaces)
    }
}

@Suite struct WakeRunnerTests {
    static let destination = "http://127.0.0.1:9/uploads"
    static let roomy = MemoryGuard(probe: FakeSystem().probe)
    static let transient = UploadJob.Failure(domain: "http", code: "server-error", message: "503 Service Unavailable", transient: true)

    /// Four analysed photos: p000's job succeeded, p001's failed (transient), p002's is registered,
    /// p003 has none.
    static func libraryWithJobs(destination: String = destination) throws -> (Library, AssetStore, [String: AssetRecord]) {
        let library = try Library(photos: 4)
        let store = try library.store()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) {
            #expect(try store.bankVerdict(BankedVerdict(json: "{}", label: "no-faces", faceCount: 0, score: 0), for: asset))
        }
        var rows: [String: AssetRecord] = [:]
        for asset in try store.assets() { rows[asset.path] = asset }
        for (path, result) in [("p000.jpg", JobResult.succeeded(status: 201, serverID: nil, headers: [:])),
                               ("p001.jpg", JobResult.failed(status: 503, headers: [:], failure: transient))] {
            let asset = try #require(rows[path])
            _ = try #require(try store.createJob(for: asset, destination: destination, inflightLimit: .max))
            let claimed = try #require(try store.claimJobsToPerform(limit: 1).first)
            try store.checkpointJob(claimed, resumeURL: destination + "/upload-\(asset.id)", confirmedOffset: 2)
            #expect(try store.finishJob(claimed, result: result))
        }
        let p002 = try #require(rows["p002.jpg"])
        _ = try #require(try store.createJob(for: p002, destination: destination, inflightLimit: .max))
        return (library, store, rows)
    }

    /// The seeds' processJobs() order, proved by a tight inflight limit: with three jobs held and a
    /// limit of two, the retry fits only after the acknowledgement, and the new job only after the
    /// cancellation; the analysis sees every job step already done.
    @Test func processesInOrderAcknowledgeRetryCancelCreateAnalyse() async throws {
        let (library, store, rows) = try Self.libraryWithJobs()
        // p002 changes on disk: its registered job is redundant, and it needs analysing again.
        try Data("photo 2, edited and longer".utf8).write(to: library.root.appendingPathComponent("photos/p002.jpg"))
        let analyzer = SnapshotAnalyzer(store: store)
        var options = WakeOptions(destination: Self.destination)
        options.inflightLimit = 2
        let report = try await WakeRunner(store: store, analyzer: analyzer, memory: Self.roomy, options: options).runOnOwnThread()

        #expect(report.acknowledged == 1 && report.retried == 1 && report.cancelled == 1 && report.created == 1 && report.analysed == 1,
                "\(report)")
        let seen = analyzer.seen.withLock { $0 }
        #expect(seen.map(\.path) == ["p002.jpg"])
        // At analysis time: p001's retry and p003's new job are registered, nothing waits for acknowledgement.
        #expect(seen.first?.registered == [rows["p001.jpg"]?.id, rows["p003.jpg"]?.id])
        #expect(seen.first?.finished == 0)
        #expect(try store.asset(path: "p000.jpg")?.state == .uploaded)
        #expect(try store.asset(path: "p001.jpg")?.attempts == 1)
    }

    /// After `--to` changes, a failed job is retried to the new destination, from the start (the
    /// old server's upload URL and offset mean nothing to the new one).
    @Test func aRetryGoesToTheNewDestination() async throws {
        let (library, store, rows) = try Self.libraryWithJobs(destination: "http://old.example/uploads")
        defer { withExtendedLifetime(library) {} }
        let runner = WakeRunner(store: store, analyzer: SnapshotAnalyzer(store: store), memory: Self.roomy,
                                options: WakeOptions(destination: "http://new.example/uploads"))
        let report = try await runner.runOnOwnThread()
        #expect(report.retried == 1)
        let jobs = try store.jobs(for: .process)
        let retried = try #require(jobs.first { $0.assetID == rows["p001.jpg"]?.id })
        #expect(retried.destination == "http://new.example/uploads")
        #expect(retried.resumeURL == nil && retried.confirmedOffset == 0)
        // The job made before the change is not a failure: it stays with its destination.
        #expect(jobs.first { $0.assetID == rows["p002.jpg"]?.id }?.destination == "http://old.example/uploads")
    }

    /// With jobs waiting and no agent, a wake that did nothing is not "processing".
    @Test func noAgentAndNoProgressIsNotProgressing() async throws {
        let library = try Library(photos: 1)
        let store = try library.store()
        _ = try store.scan()
        let analyzer = SnapshotAnalyzer(store: store)
        let runner = WakeRunner(store: store, analyzer: analyzer, memory: Self.roomy, options: WakeOptions(destination: Self.destination))
        let first = try await runner.runOnOwnThread()            // analyses the photo
        #expect(first.analysed == 1 && first.progressing)
        let second = try await runner.runOnOwnThread()           // creates its job
        #expect(second.created == 1 && second.progressing)
        let idle = try await runner.runOnOwnThread()             // nothing to do, nobody to do it
        #expect(!idle.madeProgress && idle.workRemains && idle.jobsInFlight == 1)
        #expect(!idle.agentRunning && !idle.progressing)
        var presence: AgentPresence? = try AgentPresence(store: try library.store())
        let withAgent = try await runner.runOnOwnThread()
        #expect(withAgent.agentRunning && withAgent.progressing)
        presence = nil
        let gone = try await runner.runOnOwnThread()
        #expect(presence == nil && !gone.agentRunning && !gone.progressing, "the presence ended with its object")
    }

    /// The runtime limit is asked before each photo of the analysis page is admitted: with a limit
    /// shorter than one analysis, at most the photo already started is analysed (and banked), not
    /// the page of six; the wake reports the interruption with work remaining.
    @Test func theRuntimeLimitStopsAdmittingPhotosToTheAnalysisPage() async throws {
        let library = try Library(photos: 6)
        let store = try library.store()
        let analyzer = SlowAnalyzer(delay: 0.2)
        var options = WakeOptions(destination: Self.destination)
        options.pageSize = 40
        options.runtimeLimit = .milliseconds(50)
        let report = try await WakeRunner(store: store, analyzer: analyzer, memory: Self.roomy, options: options).runOnOwnThread()
        let calls = analyzer.calls.withLock { $0 }
        // One analysis outlasts the limit, so no second photo may start.
        #expect(calls <= 1, "analysed \(calls) photos after a limit shorter than one analysis")
        #expect(report.analysed == calls, "the verdict of the photo in flight is banked")
        #expect(try store.counts().discovered == 6 - calls)
        #expect(report.interrupted && report.bailed == "runtime limit reached" && report.workRemains && report.progressing)
        // Without a limit the same wake analyses the whole page.
        let unbounded = try await WakeRunner(store: store, analyzer: SlowAnalyzer(delay: 0), memory: Self.roomy,
                                       options: WakeOptions(destination: Self.destination)).runOnOwnThread()
        #expect(unbounded.analysed == 6 - calls && !unbounded.interrupted)
    }
}

/// An analyser that takes `delay` seconds per photo and counts its calls.
final class SlowAnalyzer: PhotoAnalyzing {
    let delay: TimeInterval
    let calls = Mutex(0)
    init(delay: TimeInterval) { self.delay = delay }
    func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
        calls.withLock { $0 += 1 }
        Thread.sleep(forTimeInterval: delay)
        return .verdict(.noFaces)
    }
}

extension WakeRunner {
    /// `run` on a thread of its own, as `wake` runs it: it blocks its thread while the analysis
    /// runs on Swift's cooperative pool, which a test's own thread may belong to.
    func runOnOwnThread() async throws(StoreError) -> WakeReport {
        try await onOwnThreadUntilDone("photodrain-test-wake") { () -> Result<WakeReport, StoreError> in
            do throws(StoreError) { return .success(try self.run()) } catch { return .failure(error) }
        }.get()
    }
}
