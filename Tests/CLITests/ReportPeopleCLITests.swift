import AssetStore
import FaceClustering
import Foundation
import Testing

/// The report's people page (issue 36 item 6), made from the sample photos as a user would:
/// `analyze` (people on by default), `people name`, `report`, and the page opened in Chromium.
@Suite(.serialized) struct ReportPeopleCLITests {
    /// The sample photos as they are (the embedding needs faces big enough to align), analysed.
    static func analysedSamples() throws -> Workspace {
        let ws = try Workspace()
        let names = try FileManager.default.contentsOfDirectory(atPath: CLI.repository.appendingPathComponent("SampleImages").path)
            .filter { $0.hasSuffix(".jpg") || $0.hasSuffix(".png") }
        for name in names {
            try ws.write(name, bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: CLI.sample(name)))))
        }
        let run = try CLI.run(["analyze", ws.library, "--store", ws.store])
        #expect(run.status == 0, "\(run.stderr)")
        return ws
    }

    /// Every match of `pattern`'s first capture group in `text`.
    static func captures(_ pattern: String, in text: String) throws -> [[String]] {
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (1..<match.numberOfRanges).map { Range(match.range(at: $0), in: text).map { String(text[$0]) } ?? "" }
        }
    }

    /// The crops of a people page: (link, photo path from the crop's title), section by section.
    static func crops(in page: String) throws -> [(person: String, href: String, path: String)] {
        var out: [(String, String, String)] = []
        for section in page.components(separatedBy: "<section class=\"person\"").dropFirst() {
            let person = try captures(#"<h2>([^<]*)</h2>"#, in: section).first?.first ?? ""
            for link in try captures(#"<a href="([^"]*)" title="([^"·]*) ·"#, in: section) {
                out.append((person, link[0], link[1].trimmingCharacters(in: .whitespaces)))
            }
        }
        return out
    }

    @Test func thePeoplePageShowsEachPersonsFacesLinkedToTheirPhotos() throws {
        let ws = try Self.analysedSamples()
        let listed = try CLI.run(["people", ws.library, "--store", ws.store, "--json"])
        let people = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(people.count == 3, "\(listed.stdout)")
        let hopper = try #require(people.first { person in
            (person["faces"] as? [[String: Any]] ?? []).contains { $0["path"] as? String == "hopper.jpg" }
        }?["id"] as? Int)
        #expect(try CLI.run(["people", "name", "\(hopper)", "Grace Hopper", ws.library, "--store", ws.store]).status == 0)

        // A single file: the people page beside it, linked both ways.
        let out = ws.root.appendingPathComponent("report.html").path
        let made = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out])
        #expect(made.status == 0, "\(made.stderr)")
        let pagePath = ws.root.appendingPathComponent("report-people.html").path
        #expect(made.stdout.contains("wrote \(pagePath): 3 people, 9 face crops"), "\(made.stdout)")
        let report = try String(contentsOfFile: out, encoding: .utf8)
        let page = try String(contentsOfFile: pagePath, encoding: .utf8)
        #expect(report.contains(#"<a id="people-link" href="report-people.html">3 people</a> in 9 faces"#))
        let crops = try Self.crops(in: page)
        #expect(crops.count == 9)
        // The named person leads; Hopper's three photos are the original, its rotated copy and the portraits.
        #expect(crops.first?.person == "Grace Hopper")
        #expect(Set(crops.filter { $0.person == "Grace Hopper" }.map(\.path)) == ["hopper.jpg", "hopper-orientation-6.jpg", "three-portraits.jpg"])
        // Every crop links to its own photo's card in the report.
        for crop in crops {
            let number = try #require(try Self.captures(#"^report\.html#photo=(\d+)$"#, in: crop.href).first?.first, "\(crop.href)")
            let card = try #require(try Self.captures(#"<article class="card"[^>]* data-path="([^"]*)" id="photo-"# + number + "\"", in: report).first)
            #expect(card[0] == crop.path, "\(crop.href) leads to \(card[0]), not \(crop.path)")
        }
        // Each card names its photo's people, linked to their section.
        #expect(report.contains(#"<a href="report-people.html#person-\#(hopper)">Grace Hopper</a>"#))
        let portraits = try #require(ReportCLITests.card(for: "three-portraits.jpg", in: report))
        #expect(Self.occurrences(of: "report-people.html#person-", in: portraits) == 3)

        // Chromium opens it and decodes every crop.
        let check = try ReportCLITests.checkInBrowser(pagePath, in: ws.root.appendingPathComponent("browser"))
        try #require(check.status == 0, "Scripts/check-report failed (status \(check.status)):\n\(check.output)")
        #expect(ReportCLITests.bodyAttribute("data-people", in: check.dom) == "3")
        #expect(ReportCLITests.bodyAttribute("data-crops", in: check.dom) == "9")
        #expect(ReportCLITests.bodyAttribute("data-crops-loaded", in: check.dom) == "9")

        // Pages: the people page goes among them and links to each photo's page.
        let folder = ws.root.appendingPathComponent("pages").path
        let paged = try CLI.run(["report", ws.library, "--store", ws.store, "--out", folder + "/", "--page-size", "4"])
        #expect(paged.status == 0, "\(paged.stderr)")
        let pagedPeople = try String(contentsOfFile: folder + "/people.html", encoding: .utf8)
        for crop in try Self.crops(in: pagedPeople) {
            let link = try #require(try Self.captures(#"^page-(\d{4})\.html#photo=(\d+)$"#, in: crop.href).first, "\(crop.href)")
            let (pageNumber, photo) = (try #require(Int(link[0])), try #require(Int(link[1])))
            #expect(pageNumber == (photo - 1) / 4 + 1)
            let onPage = try String(contentsOfFile: folder + "/" + String(format: "page-%04d.html", pageNumber), encoding: .utf8)
            #expect(onPage.contains(#"data-path="\#(crop.path)" id="photo-\#(photo)""#), "\(crop.href)")
            #expect(onPage.contains(#"<a id="people-link" href="people.html">"#))
        }
        #expect(try String(contentsOfFile: folder + "/index.html", encoding: .utf8).contains(#"<a id="people-link" href="people.html">"#))

        // Forget every face: no people, and the people page an earlier report wrote goes.
        for face in Set(try Self.captures(#"face (\d+),"#, in: page).map { $0[0] }) {
            #expect(try CLI.run(["people", "forget", face, ws.library, "--store", ws.store]).status == 0)
        }
        let again = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("removed \(pagePath): the library has no people now"), "\(again.stdout)")
        #expect(!FileManager.default.fileExists(atPath: pagePath))
        #expect(!(try String(contentsOfFile: out, encoding: .utf8)).contains(#"id="people-link""#))
    }

    /// A library of many people stays a page a browser opens: 500 sections, about 2,000 crops
    /// (then one face each), and a line for the rest; cards link only to people with a section.
    @Test func aLibraryOfManyPeopleKeepsThePageSmall() throws {
        let ws = try Workspace()
        let store = try AssetStore(root: ws.library, path: ws.store)
        // Identities 0-99 in 25 photos each, 100-649 in one photo each: 650 people.
        var photos: [(name: String, identity: Int)] = []
        for identity in 0..<100 { for copy in 0..<25 { photos.append((String(format: "many/%03d-%02d.jpg", identity, copy), identity)) } }
        for identity in 100..<650 { photos.append((String(format: "one/%03d.jpg", identity), identity)) }
        for photo in photos { try ws.write(photo.name, bytes: Array(photo.name.utf8)) }
        _ = try store.scan()
        let identities = Dictionary(uniqueKeysWithValues: photos.map { ($0.name, $0.identity) })
        var synthetic = SyntheticFaces(seed: 5)
        while case let page = try store.claimUnanalyzed(limit: 500), !page.isEmpty {
            for asset in page {
                var banked = BankedVerdict(json: #"{"label":"faces"}"#, label: "faces", faceCount: 1, score: 0.9)
                banked.faces = [BankedFace(index: 0, x: 10, y: 10, width: 80, height: 90, embedding: synthetic.face(of: identities[asset.path] ?? 0))]
                #expect(try store.bankVerdict(banked, for: asset))
            }
        }
        let out = ws.root.appendingPathComponent("report").path + "/"
        let made = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out])
        #expect(made.status == 0, "\(made.stderr)")
        let page = try String(contentsOfFile: out + "people.html", encoding: .utf8)
        #expect(Self.occurrences(of: "<section class=\"person\"", in: page) == 500)
        // 83 people of 25 faces show 24 each (1,992), the 84th the 8 the budget has left, the
        // next 416 their representative alone; none of the photos decodes, so each is a placeholder.
        #expect(Self.occurrences(of: "<span class=\"crop missing\">", in: page) == 83 * 24 + 8 + 416)
        #expect(page.contains("and 150 more people with fewer faces (150 faces)"))
        // A card of a person past the 500th names them without a link to a section that is not there.
        let lastPage = try String(contentsOfFile: out + "page-0015.html", encoding: .utf8)
        #expect(lastPage.contains("<p class=\"people\">person "))
        #expect(Self.occurrences(of: "people.html#person-", in: lastPage) < Self.occurrences(of: "<p class=\"people\">", in: lastPage))
    }

    static func occurrences(of needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }
}
