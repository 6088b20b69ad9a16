import Foundation
import Testing
@testable import AssetStore

/// The wake/agent path keeps the asset row's coordination timestamps like the drain path does.
@Suite struct AgentPathTests {
    @Test func anAgentClaimStampsLastAttempt() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        try library.write("b.jpg")
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) { #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: asset)) }
        for asset in try store.assetsNeedingJobs(limit: 10) {
            _ = try #require(try store.createJob(for: asset, destination: "http://127.0.0.1:9/u", inflightLimit: .max))
        }
        #expect(try store.assets().allSatisfy { $0.lastAttemptAt == nil }, "creating a job is not an attempt")
        let claimed = try store.claimJobsToPerform(limit: 1)
        #expect(claimed.count == 1)
        let attempted = try store.assets().filter { $0.lastAttemptAt != nil }
        #expect(attempted.map(\.id) == claimed.map(\.assetID))
    }

    @Test func agentPresenceIsSeenByOtherStoreObjectsAndEndsWithIt() throws {
        let library = try TemporaryLibrary()
        let store = try library.open()
        #expect(!store.isAgentRunning())
        var presence: AgentPresence? = try AgentPresence(store: try library.open())
        #expect(store.isAgentRunning())
        #expect(try library.open().isAgentRunning())
        presence = nil
        #expect(presence == nil && !store.isAgentRunning())
    }
}
