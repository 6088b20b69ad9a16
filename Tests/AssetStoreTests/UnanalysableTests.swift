import Foundation
import Testing
@testable import AssetStore

/// Files that are not photos PhotoDrain analyses keep their row and an `unanalysable` verdict, and
/// stay out of uploads unless a runner asks for them.
@Suite struct UnanalysableTests {
    /// A library of one photo, one video and one broken photo, all analysed.
    private func analysedLibrary() throws -> (TemporaryLibrary, AssetStore) {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        try library.write("IMG_0001.MOV")
        try library.write("bad.jpg")
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) {
            let verdict: BankedVerdict
            switch asset.path {
            case "IMG_0001.MOV":
                verdict = BankedVerdict(json: "{\"label\":\"unanalysable\"}", label: AssetRecord.unanalysableLabel, faceCount: 0,
                                        score: nil, analysisError: "unsupported-format", sha256: "cd")
            case "bad.jpg":
                verdict = BankedVerdict(json: "{\"label\":\"error\"}", label: "error", faceCount: 0, score: nil, analysisError: "corrupt")
            default:
                verdict = TemporaryLibrary.verdict()
            }
            #expect(try store.bankVerdict(verdict, for: asset))
        }
        return (library, store)
    }

    @Test func countsKeepUnanalysableFilesApart() throws {
        let (library, store) = try analysedLibrary()
        defer { withExtendedLifetime(library) {} }
        let counts = try store.counts()
        #expect(counts.total == 3 && counts.discovered == 0)
        #expect(counts.analyzed == 2 && counts.unanalysable == 1 && counts.undecodable == 1)
        #expect(try store.unanalysableAssets().map(\.path) == ["IMG_0001.MOV"])
        #expect(try store.undecodableAssets().map(\.path) == ["bad.jpg"])
        #expect(try store.asset(path: "IMG_0001.MOV")?.isUnanalysable == true)
        #expect(try store.asset(path: "bad.jpg")?.isUnanalysable == false)
    }

    @Test(arguments: [false, true])
    func uploadsTakeUnanalysableFilesOnlyWhenAsked(include: Bool) throws {
        let (library, store) = try analysedLibrary()
        defer { withExtendedLifetime(library) {} }
        let expected = include ? ["IMG_0001.MOV", "a.jpg", "bad.jpg"] : ["a.jpg", "bad.jpg"]
        #expect(try store.uploadableCount(includeUnanalysable: include) == expected.count)
        #expect(try store.assetsNeedingJobs(limit: 10, includeUnanalysable: include).map(\.path).sorted() == expected)
        #expect(try store.claimForUpload(limit: 10, includeUnanalysable: include).map(\.path).sorted() == expected)
    }

    @Test func anUploadedUnanalysableFileCountsAsUploaded() throws {
        let (library, store) = try analysedLibrary()
        defer { withExtendedLifetime(library) {} }
        let movie = try #require(try store.claimForUpload(limit: 10, includeUnanalysable: true).first { $0.path == "IMG_0001.MOV" })
        #expect(try store.recordUploaded(movie, serverID: "obj-1"))
        let counts = try store.counts()
        #expect(counts.unanalysable == 0 && counts.uploaded == 1)
        #expect(try store.unanalysableAssets().map(\.state) == [.uploaded])
    }
}
