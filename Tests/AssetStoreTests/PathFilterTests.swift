import Foundation
import Testing
@testable import AssetStore

/// --include/--exclude: fnmatch(3) with no flags on the relative path, the same in Swift and in SQL.
@Suite struct PathFilterTests {
    /// pattern, path, matches.
    static let globs: [(String, String, Bool)] = [
        ("*.jpg", "a.jpg", true),
        ("*.jpg", "2019/trip/a.jpg", true),         // * crosses '/'
        ("*.jpg", "a.JPG", false),                  // case counts
        ("*.[jJ][pP][gG]", "a.JPG", true),
        ("2019/*", "2019/a.jpg", true),
        ("2019/*", "2019/deep/a.jpg", true),
        ("2019/*", "x/2019/a.jpg", false),          // anchored at the start
        ("IMG_????.HEIC", "IMG_0001.HEIC", true),
        ("IMG_????.HEIC", "IMG_01.HEIC", false),
        ("[!a]*", "b.jpg", true),
        ("[!a]*", "a.jpg", false),
        ("\\*.jpg", "*.jpg", true),                 // a backslash quotes
        ("\\*.jpg", "a.jpg", false),
        ("it's/*", "it's/a.jpg", true),             // a quote survives the SQL literal
        ("a.jpg", "a.jpg", true),
        ("a.jpg", "b/a.jpg", false),
    ]

    @Test(arguments: globs.indices)
    func matchesLikeFnmatch(index: Int) throws {
        let (pattern, path, expected) = Self.globs[index]
        #expect(try PathFilter(include: [pattern]).matches(path) == expected, "\(pattern) vs \(path)")
        #expect(try PathFilter(exclude: [pattern]).matches(path) == !expected)
        // The store's SQL agrees with Swift.
        let library = try TemporaryLibrary()
        try library.write(path)
        _ = try library.open().scan()
        let filtered = try AssetStore(root: library.libraryPath, path: library.storePath, filter: PathFilter(include: [pattern]))
        #expect(try filtered.assets().map(\.path) == (expected ? [path] : []), "\(pattern) vs \(path)")
    }

    @Test func includeIsAnyExcludeWins() throws {
        let filter = try PathFilter(include: ["2019/*", "2020/*"], exclude: ["*.MOV"])
        #expect(filter.matches("2019/a.jpg") && filter.matches("2020/b.jpg"))
        #expect(!filter.matches("2021/c.jpg") && !filter.matches("2019/d.MOV"))
        #expect(PathFilter.all.matches("anything") && PathFilter.all.isEmpty)
        let error = try #require(throws: StoreError.self) { try PathFilter(include: ["*.jpg", ""]) }
        #expect(error.code == .invalidArgument)
    }

    @Test func aFilteredStoreClaimsCountsAndListsOnlyItsRows() throws {
        let library = try TemporaryLibrary()
        for name in ["2019/a.jpg", "2019/b.MOV", "2020/c.jpg"] { try library.write(name) }
        _ = try library.open().scan()
        let store = try AssetStore(root: library.libraryPath, path: library.storePath,
                                   filter: PathFilter(include: ["2019/*"], exclude: ["*.MOV"]))
        #expect(try store.unanalyzedCount() == 1)
        #expect(try store.counts().total == 1)
        let claimed = try store.claimUnanalyzed(limit: 10)
        #expect(claimed.map(\.path) == ["2019/a.jpg"])
        #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: claimed[0]))
        #expect(try store.unanalyzedCount() == 0 && store.uploadableCount() == 1)
        #expect(try store.assetsNeedingJobs(limit: 10).map(\.path) == ["2019/a.jpg"])
        #expect(try store.claimForUpload(limit: 10).map(\.path) == ["2019/a.jpg"])
        // Unfiltered, the other rows are all still there, untouched.
        let whole = try library.open()
        #expect(try whole.unanalyzedCount() == 2 && whole.counts().total == 3)
    }

    @Test func aDryRunPlansWithoutWriting() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        try library.write("b.jpg")
        try library.write("notes.txt")
        let store = try library.open()
        _ = try store.scan()
        let a = try #require(try store.claimUnanalyzed(limit: 10).first { $0.path == "a.jpg" })
        #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: a))
        try store.releaseClaims()
        try library.write("c.jpg")
        try library.write("b.jpg", "edited, and longer")
        let token = try store.currentToken()
        let rows = try store.assets()

        let plan = try store.dryRun(includeUnanalysable: false)
        #expect(plan.analyse.map(\.path) == ["b.jpg", "c.jpg", "notes.txt"])
        #expect(plan.analyse.map(\.reason) == ["changed since it was scanned", "new", "not analysed yet"])
        #expect(plan.upload.map(\.path) == ["a.jpg", "b.jpg", "c.jpg", "notes.txt"])
        #expect(plan.upload.map(\.afterAnalysis) == [false, true, true, true])
        #expect(try store.currentToken() == token && store.assets() == rows)

        let filtered = try AssetStore(root: library.libraryPath, path: library.storePath, filter: PathFilter(exclude: ["*.txt", "c*"]))
        let narrow = try filtered.dryRun(includeUnanalysable: false)
        #expect(narrow.analyse.map(\.path) == ["b.jpg"] && narrow.upload.map(\.path) == ["a.jpg", "b.jpg"])
    }
}
