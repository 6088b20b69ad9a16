import Foundation
import Testing

/// `photodrain report` on a library bigger than `--page-size` writes an index
/// and pages; the filters on the index reach photos on every page. Page sizes here are tiny so a
/// dozen sample photos make several pages.
@Suite(.serialized) struct ReportPagesCLITests {
    /// Sorts last, so with 5 photos a page it lands on the last page.
    static let brokenName = "zz-broken.jpg"

    /// The ten sample photos, one copy under an awkward name, and a broken JPEG: 12 photos, analysed.
    struct Library {
        let ws: Workspace
        /// Every photo's relative path, in the store's order (by path, bytewise).
        let photos: [String]

        init() throws {
            ws = try Workspace()
            var photos = try ws.addSmallSamples()
            let original = try Data(contentsOf: URL(fileURLWithPath: ws.path("hopper.jpg")))
            try ws.write(ReportCLITests.awkwardName, bytes: [UInt8](original))
            try ws.write(ReportPagesCLITests.brokenName, bytes: [0xFF, 0xD8, 0xFF, 0xE0, 0, 16] + Array(repeating: 7, count: 300))
            photos += [ReportCLITests.awkwardName, ReportPagesCLITests.brokenName]
            self.photos = photos.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            let analyse = try CLI.run(["analyze", ws.library, "--store", ws.store, "--analysis-size", "96"])
            #expect(analyse.status == 0, "stderr: \(analyse.stderr)")
        }

        /// Runs `photodrain report --out <workspace>/out` with `extra` options.
        func report(_ out: String, _ extra: [String]) throws -> CLI.Result {
            try CLI.run(["report", ws.library, "--store", ws.store, "--out", ws.root.appendingPathComponent(out).path + (out.hasSuffix("/") ? "/" : "")] + extra)
        }

        func read(_ relative: String) throws -> String {
            try String(contentsOfFile: ws.root.appendingPathComponent(relative).path, encoding: .utf8)
        }

        func exists(_ relative: String) -> Bool {
            FileManager.default.fileExists(atPath: ws.root.appendingPathComponent(relative).path)
        }
    }

    /// `text` escaped as the report escapes it.
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }

    /// The value of every `name="..."` attribute on the cards' opening tags, in order.
    static func cardAttribute(_ name: String, in html: String) -> [String] {
        html.components(separatedBy: "<article class=\"card\" ").dropFirst().compactMap { piece in
            let tag = piece.prefix { $0 != ">" }
            guard let start = tag.range(of: "\(name)=\"") else { return nil }
            return tag[start.upperBound...].split(separator: "\"", maxSplits: 1).first.map(String.init)
        }
    }

    /// The index's manifest, parsed.
    static func manifest(in html: String) throws -> [String: Any] {
        let open = "<script type=\"application/json\" id=\"manifest\">"
        let start = try #require(html.range(of: open))
        let end = try #require(html[start.upperBound...].range(of: "</script>"))
        let json = try JSONSerialization.jsonObject(with: Data(html[start.upperBound..<end.lowerBound].utf8))
        return try #require(json as? [String: Any])
    }

    @Test func aLibraryOverThePageSizeGetsAnIndexAndPagesWithEveryPhotoOnExactlyOnePage() throws {
        let library = try Library()
        let result = try library.report("out/", ["--page-size", "5"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("index.html and 3 pages of up to 5 photos"), "\(result.stdout)")
        #expect(result.stdout.contains("12 photos (11 thumbnails, 1 without a preview)"), "\(result.stdout)")
        #expect(library.exists("out/index.html"))
        #expect(!library.exists("out/page-0004.html"))

        var pathsSeen: [String] = []
        for page in 1...3 {
            let html = try library.read("out/page-000\(page).html")
            let paths = Self.cardAttribute("data-path", in: html)
            let onPage = (page - 1) * 5..<min(page * 5, library.photos.count)
            let expected = Array(library.photos[onPage])
            // In path order, five to a page, each card named by its place in the library.
            #expect(paths == expected.map(Self.escaped), "page \(page)")
            #expect(Self.cardAttribute("id", in: html) == onPage.map { "photo-\($0 + 1)" }, "page \(page)")
            #expect(ReportCLITests.thumbnails(in: html).count == expected.filter { $0 != Self.brokenName }.count)
            #expect(html.contains("<h1>PhotoDrain report: page \(page) of 3</h1>"))
            #expect(html.contains("<a rel=\"index\" href=\"index.html\""))
            #expect(html.contains("rel=\"prev\"") == (page > 1) && html.contains("rel=\"next\"") == (page < 3))
            #expect(!html.contains("src=\"http") && !html.contains("href=\"http") && !html.contains("<link"))
            pathsSeen += paths
        }
        #expect(pathsSeen.count == library.photos.count)
        #expect(Set(pathsSeen) == Set(library.photos.map(Self.escaped)))

        // The index: no thumbnail, a row and a link per page, and a manifest that agrees with the pages.
        let index = try library.read("out/index.html")
        #expect(!index.contains("<img") && !index.contains("data:image"))
        for page in 1...3 { #expect(index.contains("href=\"page-000\(page).html\" data-href=\"page-000\(page).html\">page \(page)</a>")) }
        #expect(ReportCLITests.occurrences(of: "<tr data-page=", in: index) == 3)
        let manifest = try Self.manifest(in: index)
        #expect(manifest["pages"] as? [String] == ["page-0001.html", "page-0002.html", "page-0003.html"])
        let labels = try #require(manifest["labels"] as? [String])
        let rows = try #require(manifest["photos"] as? [[Any]])
        #expect(rows.compactMap { $0.first as? String } == library.photos)
        for (i, row) in rows.enumerated() {
            let path = try #require(row[0] as? String), label = try #require(row[1] as? Int), page = try #require(row[3] as? Int)
            let html = try library.read("out/page-000\(page).html")
            let card = try #require(ReportCLITests.card(for: Self.escaped(path), in: html), "\(path) is not on page \(page)")
            #expect(card.contains("id=\"photo-\(i + 1)\""))
            #expect(card.contains("data-label=\"\(labels[label])\""))
        }
        // The awkward name cannot close the manifest's <script>.
        #expect(index.contains("a\\u003cb>&\\\"c'.jpg"), "\(index.suffix(3000))")
    }

    @Test func theIndexCountsWhatStatusCounts() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        // Made-up verdicts: one photo with a face, uploaded; one failed; the rest analysed.
        _ = try ReportCLITests.bankMadeUpVerdicts(in: ws)
        // And a file that is not a photo: held back, counted apart from the analysed photos.
        try ws.write("clip.mov", bytes: [0, 0, 0, 0x14] + Array("ftypqt  ".utf8) + [UInt8](repeating: 0, count: 64))
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store, "--analysis-size", "96"]).status == 0)
        let out = ws.root.appendingPathComponent("out").path + "/"
        let report = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out, "--page-size", "3"])
        #expect(report.status == 0, "stderr: \(report.stderr)")
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        #expect(status.status == 0, "stderr: \(status.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let counts = try #require(object["counts"] as? [String: Int])
        let index = try String(contentsOfFile: out + "index.html", encoding: .utf8)

        for (caption, key) in [("photos", "total"), ("waiting for analysis", "discovered"), ("analysed, not uploaded", "analyzed"),
                               ("uploaded", "uploaded"), ("upload failed", "failed"), ("undecodable", "undecodable"),
                               ("not photos (unanalysable)", "unanalysable")] {
            let value = try #require(counts[key])
            #expect(index.contains("<li><b>\(value)</b><small>\(caption)</small></li>"), "\(caption) should be \(value)")
        }
        let faces = try #require(counts["faces"]), withFaces = try #require(counts["withFaces"])
        #expect(index.contains("<li><b>\(faces)</b><small>faces in \(withFaces) photo\(withFaces == 1 ? "" : "s")</small></li>"))
        #expect(index.contains("<option value=\"uploaded\">uploaded (\(try #require(counts["uploaded"])))</option>"))
        #expect(index.contains("<option value=\"failed\">upload failed (\(try #require(counts["failed"])))</option>"))

        // The pages table adds up to the same totals: 11 files over 4 pages of 3 (its state column
        // counts the held-back file among the analysed, as the state filter does).
        func columnSum(_ attribute: String) -> Int {
            index.components(separatedBy: "<td \(attribute)>").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }.reduce(0, +)
        }
        #expect(ReportCLITests.occurrences(of: "<tr data-page=", in: index) == 4)
        #expect(columnSum("data-state=\"uploaded\"") == counts["uploaded"])
        #expect(columnSum("data-state=\"failed\"") == counts["failed"])
        #expect(columnSum("data-state=\"analyzed\"") == (counts["analyzed"] ?? 0) + (counts["unanalysable"] ?? 0))
        #expect(columnSum("data-label=\"unanalysable\"") == counts["unanalysable"])
        #expect(columnSum("data-label=\"faces\"") == withFaces)
    }

    @Test func aFileOutKeepsOneFileUpToThePageSizeAndBecomesTheIndexPastIt() throws {
        let library = try Library()
        // 12 photos, the default page size: one file, as always.
        let single = try library.report("small.html", [])
        #expect(single.status == 0, "stderr: \(single.stderr)")
        #expect(single.stdout.contains("wrote ") && single.stdout.contains("small.html: 12 photos"), "\(single.stdout)")
        let html = try library.read("small.html")
        #expect(ReportCLITests.occurrences(of: "<article class=\"card\"", in: html) == 12)
        #expect(!html.contains("id=\"manifest\"") && !html.contains("rel=\"index\""))
        #expect(!library.exists("small-pages"))

        // --single-file holds to one file past the page size.
        let forced = try library.report("forced.html", ["--page-size", "5", "--single-file"])
        #expect(forced.status == 0, "stderr: \(forced.stderr)")
        #expect(ReportCLITests.occurrences(of: "<article class=\"card\"", in: try library.read("forced.html")) == 12)
        #expect(!library.exists("forced-pages"))

        // Past the page size, report.html is the index and the pages go into report-pages/ beside it.
        let paged = try library.report("report.html", ["--page-size", "5"])
        #expect(paged.status == 0, "stderr: \(paged.stderr)")
        let index = try library.read("report.html")
        #expect(index.contains("id=\"manifest\""))
        #expect(index.contains("href=\"report-pages/page-0001.html\""))
        #expect(try Self.manifest(in: index)["pages"] as? [String] == (1...3).map { "report-pages/page-000\($0).html" })
        for page in 1...3 {
            let html = try library.read("report-pages/page-000\(page).html")
            #expect(html.contains("<a rel=\"index\" href=\"../report.html\""))
        }
        #expect(!library.exists("report-pages/page-0004.html"))

        // Back under the page size, report.html is one file again and the pages' folder goes.
        let again = try library.report("report.html", [])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(again.stdout.contains("and the 3 pages an earlier report wrote there"), "\(again.stdout)")
        #expect(ReportCLITests.occurrences(of: "<article class=\"card\"", in: try library.read("report.html")) == 12)
        #expect(!library.exists("report-pages"))
    }

    @Test func aSmallerReportRemovesItsStalePagesAndNothingElse() throws {
        let library = try Library()
        #expect(try library.report("out/", ["--page-size", "2"]).status == 0)
        #expect(library.exists("out/page-0006.html"))
        try Data("mine".utf8).write(to: library.ws.root.appendingPathComponent("out/notes.txt"))
        try Data("mine".utf8).write(to: library.ws.root.appendingPathComponent("out/page-9.html"))
        try Data("<!DOCTYPE html><p>mine</p>".utf8).write(to: library.ws.root.appendingPathComponent("out/page-0007.html"))
        let again = try library.report("out", ["--page-size", "5"])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(again.stdout.contains("removed 3 pages of an earlier report past page 3"), "\(again.stdout)")
        for page in 1...3 { #expect(library.exists("out/page-000\(page).html")) }
        for page in 4...6 { #expect(!library.exists("out/page-000\(page).html")) }
        // A file of the pages' name that PhotoDrain did not write stays.
        #expect(library.exists("out/notes.txt") && library.exists("out/page-9.html") && library.exists("out/page-0007.html"))
        // No temporary file is left behind.
        let names = try FileManager.default.contentsOfDirectory(atPath: library.ws.root.appendingPathComponent("out").path)
        #expect(!names.contains { $0.hasSuffix(".partial") }, "\(names)")
    }

    @Test(arguments: [
        (["--page-size", "0"], "--page-size"),
        (["--page-size", "many"], "--page-size"),
        (["--single-file"], "--single-file"),
    ])
    func badPagingOptionsAreUsageErrors(extra: [String], mentioned: String) throws {
        let ws = try Workspace()
        let out = ws.root.appendingPathComponent("out").path + "/"
        let result = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out] + extra)
        #expect(result.status == 64)
        #expect(result.stderr.contains(mentioned), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func helpSaysWhenAndHowTheReportIsPaged() throws {
        let help = try CLI.run(["help", "report"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--page-size"))
        #expect(help.stdout.contains("--single-file"))
        #expect(help.stdout.contains("FILE-pages/page-0001.html"))
        #expect(help.stdout.contains("index.html"))
    }

    // MARK: In a real browser

    @Test func aFilterOnTheIndexFindsTheMatchOnALaterPageInChromium() throws {
        let library = try Library()
        let result = try library.report("out/", ["--page-size", "5"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let out = library.ws.root.appendingPathComponent("out")

        // The broken photo is photo 12, the only one on page 3 labelled error.
        let index = try ReportCLITests.checkInBrowser(out.appendingPathComponent("index.html").path,
                                                      in: library.ws.root.appendingPathComponent("index-check"), filter: "label=error")
        try #require(index.status == 0, "Scripts/check-report failed (status \(index.status)):\n\(index.output)")
        #expect(ReportCLITests.bodyAttribute("data-photos", in: index.dom) == "12")
        #expect(ReportCLITests.bodyAttribute("data-pages", in: index.dom) == "3")
        #expect(ReportCLITests.bodyAttribute("data-shown", in: index.dom) == "1")
        #expect(ReportCLITests.bodyAttribute("data-pages-with-matches", in: index.dom) == "1")
        let link = try #require(ReportCLITests.bodyAttribute("data-first-match", in: index.dom))
        #expect(link == "page-0003.html#label=error&amp;photo=12")
        #expect(index.dom.contains("<a href=\"page-0003.html#label=error&amp;photo=12\">\(Self.brokenName)</a>"))
        // The table marks the pages without a match, and its links carry the filter.
        #expect(index.dom.contains("<tr data-page=\"1\" class=\"none\">"))
        #expect(index.dom.contains("<tr data-page=\"3\" class=\"\">") || index.dom.contains("<tr data-page=\"3\">"))
        #expect(index.dom.contains("href=\"page-0003.html#label=error\""))

        // Following the link: page 3 opens filtered, at the broken photo's card.
        let page = try ReportCLITests.checkInBrowser(out.appendingPathComponent("page-0003.html").path,
                                                     in: library.ws.root.appendingPathComponent("page-check"), filter: "label=error&photo=12")
        try #require(page.status == 0, "Scripts/check-report failed (status \(page.status)):\n\(page.output)")
        #expect(ReportCLITests.bodyAttribute("data-cards", in: page.dom) == "2")
        #expect(ReportCLITests.bodyAttribute("data-shown", in: page.dom) == "1")
        #expect(ReportCLITests.bodyAttribute("data-target", in: page.dom) == "photo-12 shown")
        let card = try #require(ReportCLITests.card(for: Self.brokenName, in: page.dom))
        #expect(!card.contains("hidden") && card.contains("class=\"card target\""), "\(card.prefix(300))")

        // The path search works across pages too: one photo's name finds it on page 1.
        let search = try ReportCLITests.checkInBrowser(out.appendingPathComponent("index.html").path,
                                                       in: library.ws.root.appendingPathComponent("search-check"), filter: "q=ROCKET")
        try #require(search.status == 0, "Scripts/check-report failed (status \(search.status)):\n\(search.output)")
        #expect(ReportCLITests.bodyAttribute("data-shown", in: search.dom) == "1")
        let rocket = library.photos.firstIndex(of: "rocket.jpg").map { $0 + 1 } ?? 0
        #expect(ReportCLITests.bodyAttribute("data-first-match", in: search.dom) == "page-000\((rocket - 1) / 5 + 1).html#q=ROCKET&amp;photo=\(rocket)")
    }

    @Test func everyPageLoadsInChromiumWithItsThumbnails() throws {
        let library = try Library()
        let result = try library.report("out/", ["--page-size", "5"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        for page in 1...3 {
            let check = try ReportCLITests.checkInBrowser(library.ws.root.appendingPathComponent("out/page-000\(page).html").path,
                                                          in: library.ws.root.appendingPathComponent("check-\(page)"))
            try #require(check.status == 0, "Scripts/check-report failed on page \(page) (status \(check.status)):\n\(check.output)")
            let cards = page < 3 ? 5 : 2
            #expect(ReportCLITests.bodyAttribute("data-cards", in: check.dom) == "\(cards)")
            #expect(ReportCLITests.bodyAttribute("data-shown", in: check.dom) == "\(cards)")
            let thumbnails = ReportCLITests.bodyAttribute("data-thumbnails", in: check.dom)
            #expect(thumbnails == ReportCLITests.bodyAttribute("data-thumbnails-loaded", in: check.dom))
            #expect(thumbnails == "\(page < 3 ? 5 : 1)")
        }
    }
}
