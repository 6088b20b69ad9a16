import Foundation
import Testing
@testable import AssetStore

@Suite struct AnalysisClaimTests {
    @Test func twoStoresNeverClaimTheSamePhoto() throws {
        let library = try TemporaryLibrary()
        for i in 0..<30 { try library.write(String(format: "p%02d.jpg", i)) }
        let first = try library.open()
        let second = try library.open()
        _ = try first.scan()
        let a = try first.claimUnanalyzed(limit: 20)
        let b = try second.claimUnanalyzed(limit: 20)
        #expect(a.count == 20 && b.count == 10)
        #expect(Set(a.map(\.id)).isDisjoint(with: Set(b.map(\.id))))
        #expect(try second.claimUnanalyzed(limit: 5).isEmpty)
        // Released claims become available at once.
        try first.releaseClaims()
        #expect(try second.claimUnanalyzed(limit: 50).count == 20)
    }

    @Test func aVerdictIsBankedOnceAndOnlyOnTheRowAnalysed() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg", "v1")
        let store = try library.open()
        _ = try store.scan()
        let claimed = try #require(try store.claimUnanalyzed(limit: 1).first)
        #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: claimed))
        #expect(!(try store.bankVerdict(TemporaryLibrary.verdict("other"), for: claimed)))
        #expect(try store.asset(path: "a.jpg")?.label == "faces")
        // A verdict computed from an older generation of the file is dropped.
        try library.write("a.jpg", "v2 is longer")
        _ = try store.scan()
        #expect(!(try store.bankVerdict(TemporaryLibrary.verdict(), for: claimed)))
        #expect(try store.asset(path: "a.jpg")?.state == .discovered)
    }

    @Test func expiredLeasesAreTakenOver() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let first = try library.open()
        let second = try library.open()
        _ = try first.scan()
        #expect(try first.claimUnanalyzed(limit: 1, leaseSeconds: -1).count == 1)  // already expired
        #expect(try second.claimUnanalyzed(limit: 1).count == 1)
    }

    @Test func undecodablePhotoGetsATerminalVerdict() throws {
        let library = try TemporaryLibrary()
        try library.write("bad.jpg")
        let store = try library.open()
        _ = try store.scan()
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        let verdict = BankedVerdict(json: "{\"error\":\"corrupt\"}", label: nil, faceCount: 0, score: nil, analysisError: "corrupt")
        #expect(try store.bankVerdict(verdict, for: asset))
        #expect(try store.claimUnanalyzed(limit: 1).isEmpty)
        let counts = try store.counts()
        #expect(counts.undecodable == 1 && counts.discovered == 0 && counts.analyzed == 1)
        #expect(try store.undecodableAssets().map(\.path) == ["bad.jpg"])
    }
}
