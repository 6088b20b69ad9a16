import Foundation
import Testing
@testable import AssetStore

/// The streamed dry run (`dryRun(includeUnanalysable:heldBackByName:analyseLimit:uploads:visit:)`):
/// each file's fate in a library with one file in every state, the lists told in order, each in
/// path order, and nothing written.
@Suite struct DryRunTests {
    @Test func everyStateGoesToItsListInPathOrder() throws {
        let library = try TemporaryLibrary()
        for name in ["2019/uploaded.jpg", "2019/waiting.jpg", "2019/pending.jpg", "2019/video.mov", "2019/gone.jpg",
                     "2020/old.jpg", "2020/unanalysable.mov"] {
            _ = try library.write(name)
        }
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 100) {
            switch asset.path {
            case "2019/uploaded.jpg":
                #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: asset))
                let banked = try #require(try store.asset(path: asset.path))
                #expect(try store.recordUploaded(banked, serverID: "s1"))
            case "2019/waiting.jpg", "2020/old.jpg":
                #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: asset))
            case "2020/unanalysable.mov":
                #expect(try store.bankVerdict(TemporaryLibrary.verdict(AssetRecord.unanalysableLabel, faces: 0), for: asset))
            default:
                break
            }
        }
        try store.releaseClaims()
        // Since the scan: one file removed, one changed, one new folder with a new file.
        try library.remove("2019/gone.jpg")
        _ = try library.write("2020/old.jpg", "rewritten, longer than before")
        _ = try library.write("2021/new.jpg")
        let token = try store.currentToken()
        let rows = try store.assets()

        var told: [(DryRunGroup, String, String)] = []
        let counts = try store.dryRun(includeUnanalysable: false, heldBackByName: { !$0.hasSuffix(".jpg") }) { group, entry in
            told.append((group, entry.path, entry.reason))
        }
        let expected: [(DryRunGroup, String, String)] = [
            (.analyse, "2019/pending.jpg", "not analysed yet"),
            (.analyse, "2019/video.mov", "not analysed yet"),
            (.analyse, "2020/old.jpg", "changed since it was scanned"),
            (.analyse, "2021/new.jpg", "new"),
            (.upload, "2019/waiting.jpg", "analysed, waiting for upload"),
            (.upload, "2019/pending.jpg", "once analysed (not analysed yet)"),
            (.upload, "2020/old.jpg", "once analysed (changed since it was scanned)"),
            (.upload, "2021/new.jpg", "once analysed (new)"),
            (.heldBack, "2019/video.mov", "not a photo by its name: it will be unanalysable"),
            (.heldBack, "2020/unanalysable.mov", "unanalysable: not a photo PhotoDrain analyses"),
        ]
        #expect(told.map { "\($0.0) \($0.1): \($0.2)" } == expected.map { "\($0.0) \($0.1): \($0.2)" })
        #expect(counts == DryRunCounts(analyse: 4, upload: 4, heldBack: 2, skipped: 0))
        // Nothing written.
        #expect(try store.currentToken() == token && store.assets() == rows)

        // Sending unanalysable files: nothing held back, the unanalysable row waits to be sent.
        var sent: [String] = []
        try store.dryRun(includeUnanalysable: true) { group, entry in if group == .upload { sent.append(entry.path) } }
        #expect(sent == ["2019/waiting.jpg", "2020/unanalysable.mov", "2019/pending.jpg", "2019/video.mov", "2020/old.jpg", "2021/new.jpg"])

        // A page: at most two analyses told; analyze tells no uploads.
        var page: [DryRunGroup] = []
        let limited = try store.dryRun(includeUnanalysable: false, analyseLimit: 2, uploads: false) { group, _ in page.append(group) }
        #expect(page == [.analyse, .analyse] && limited == DryRunCounts(analyse: 2))
    }
}
