import Foundation
import Testing
@testable import AssetStore

/// `status`'s jobs in flight, bytes confirmed and ETA.
@Suite struct TransferProgressTests {
    @Test func jobsBytesAndTimeLeft() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", String(repeating: "a", count: 1000))
        try library.write("b.jpg", String(repeating: "b", count: 3000))
        try library.write("c.jpg", String(repeating: "c", count: 6000))
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) { #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: asset)) }
        try store.releaseClaims()
        #expect(try store.transferProgress() == TransferProgress(bytesRemaining: 10_000), "nothing moving yet: no rate, no ETA")

        let a = try #require(try store.asset(path: "a.jpg"))
        #expect(try store.recordUploaded(a, serverID: "obj-a"))
        let b = try #require(try store.asset(path: "b.jpg"))
        _ = try #require(try store.createJob(for: b, destination: "http://127.0.0.1:9/u", inflightLimit: .max))
        let job = try #require(try store.claimJobsToPerform(limit: 1).first)
        try store.checkpointJob(job, resumeURL: "http://127.0.0.1:9/u/1", confirmedOffset: 1200)

        let progress = try store.transferProgress()
        #expect(progress.jobsInFlight == 1 && progress.jobsToAcknowledge == 0)
        #expect(progress.bytesConfirmed == 1200 && progress.bytesInFlight == 3000)
        #expect(progress.bytesUploaded == 1000)
        #expect(progress.bytesRemaining == 3000 + 6000 - 1200)
        let rate = try #require(progress.bytesPerSecond)
        #expect(rate > 0 && rate <= 1000)                   // 1000 bytes in the window, over at least a second
        let eta = try #require(progress.etaSeconds)
        #expect(abs(eta - 7800 / rate) <= 1, "\(eta) s for 7800 B at \(rate) B/s")

        #expect(try store.finishJob(job, result: .succeeded(status: 201, serverID: nil, headers: [:])))
        let finished = try store.transferProgress()
        #expect(finished.jobsInFlight == 0 && finished.jobsToAcknowledge == 1 && finished.bytesConfirmed == 0)

        let narrow = try AssetStore(root: library.libraryPath, path: library.storePath, filter: PathFilter(exclude: ["c.jpg"]))
        #expect(try narrow.transferProgress().bytesRemaining == 3000)
    }
}
