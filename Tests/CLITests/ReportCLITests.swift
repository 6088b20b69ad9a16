import AssetStore
import FaceAnalysis
import Foundation
import PhotoDecoding
import Testing

/// `photodrain report` run as a user would: the page's content read as text, then the same page
/// loaded in headless Chromium through `Scripts/check-report`.
@Suite(.serialized) struct ReportCLITests {
    /// A file name with every character HTML gives a meaning to.
    static let awkwardName = "a<b>&\"c'.jpg"
    static let awkwardEscaped = "a&lt;b&gt;&amp;&quot;c&#39;.jpg"
    static let brokenName = "broken.jpg"

    /// A library of small sample photos, one under an awkward name, and a broken JPEG, analysed.
    struct Library {
        let ws: Workspace
        /// Every photo's relative path.
        let photos: [String]
        /// The verdict JSON objects by path, as `photodrain verdicts` prints them.
        let verdicts: [String: [String: Any]]

        init(analysed: Bool = true) throws {
            ws = try Workspace()
            var photos = try ws.addSmallSamples()
            let original = try Data(contentsOf: URL(fileURLWithPath: ws.path("hopper.jpg")))
            try ws.write(ReportCLITests.awkwardName, bytes: [UInt8](original))
            try ws.write(ReportCLITests.brokenName, bytes: [0xFF, 0xD8, 0xFF, 0xE0, 0, 16] + Array(repeating: 7, count: 300))
            photos += [ReportCLITests.awkwardName, ReportCLITests.brokenName]
            self.photos = photos
            guard analysed else {
                verdicts = [:]
                return
            }
            let analyse = try CLI.run(["analyze", ws.library, "--store", ws.store, "--analysis-size", "96"])
            #expect(analyse.status == 0, "stderr: \(analyse.stderr)")
            var verdicts: [String: [String: Any]] = [:]
            for line in try CLI.run(["verdicts", ws.library, "--store", ws.store]).lines {
                if let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                   let path = object["path"] as? String {
                    verdicts[path] = object["verdict"] as? [String: Any] ?? [:]
                }
            }
            self.verdicts = verdicts
        }

        /// Every face box over all verdicts, and the confirmed ones.
        var boxCounts: (all: Int, confirmed: Int) {
            let faces = verdicts.values.flatMap { $0["faces"] as? [[String: Any]] ?? [] }
            return (faces.count, faces.filter { $0["confirmed"] as? Bool == true }.count)
        }

        /// Runs `photodrain report` into `name` in the workspace and returns the result and the page.
        func report(_ name: String = "report.html", extra: [String] = []) throws -> (CLI.Result, String) {
            let out = ws.root.appendingPathComponent(name).path
            let result = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out] + extra)
            let html = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            return (result, html)
        }
    }

    /// How often `needle` occurs in `text`.
    static func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    /// The `<article class="card" ...>...</article>` of the photo at `path` (escaped as in the page).
    static func card(for escapedPath: String, in html: String) -> String? {
        for piece in html.components(separatedBy: "<article ").dropFirst()
        where piece.contains("data-path=\"\(escapedPath)\"") {
            return piece.components(separatedBy: "</article>").first
        }
        return nil
    }

    /// Every embedded thumbnail: its declared width and height and its JPEG bytes.
    static func thumbnails(in html: String) -> [(width: Int, height: Int, jpeg: [UInt8])] {
        html.components(separatedBy: "<img class=\"thumb\" ").dropFirst().compactMap { piece in
            func attribute(_ name: String) -> String? {
                guard let start = piece.range(of: "\(name)=\"") else { return nil }
                return piece[start.upperBound...].split(separator: "\"", maxSplits: 1).first.map(String.init)
            }
            guard let width = attribute("width").flatMap(Int.init), let height = attribute("height").flatMap(Int.init),
                  let source = attribute("src"), source.hasPrefix("data:image/jpeg;base64,"),
                  let data = Data(base64Encoded: String(source.dropFirst("data:image/jpeg;base64,".count))) else { return nil }
            return (width, height, [UInt8](data))
        }
    }

    @Test func pageHasACardPerPhotoEmbeddedThumbnailsAndEscapedNames() throws {
        let library = try Library()
        let (result, html) = try library.report()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("\(library.photos.count) photos (\(library.photos.count - 1) thumbnails, 1 without a preview)"), "\(result.stdout)")

        #expect(Self.occurrences(of: "<article class=\"card\"", in: html) == library.photos.count)
        // Every decodable photo is embedded as a JPEG the project's own decoder reads back.
        let thumbnails = Self.thumbnails(in: html)
        #expect(thumbnails.count == library.photos.count - 1)
        #expect(Self.occurrences(of: "src=\"data:image/jpeg;base64,", in: html) == thumbnails.count)
        for thumbnail in thumbnails {
            let image = try PhotoDecoder.decode(bytes: thumbnail.jpeg, options: DecodeOptions(output: .rgb))
            #expect(image.width == thumbnail.width && image.height == thumbnail.height)
        }
        // Nothing points outside the page.
        #expect(!html.contains("src=\"http") && !html.contains("href=\"http") && !html.contains("<link"))

        // The awkward name appears only escaped, and the HTML's structure survives it.
        #expect(html.contains(Self.awkwardEscaped))
        #expect(!html.contains("a<b>"))
        #expect(Self.card(for: Self.awkwardEscaped, in: html)?.contains("<img class=\"thumb\"") == true)

        // The broken photo gets a placeholder card with its decode error.
        let broken = try #require(Self.card(for: Self.brokenName, in: html))
        #expect(broken.contains("data-label=\"error\""))
        #expect(broken.contains("class=\"placeholder\""))
        #expect(!broken.contains("<img"))
        #expect(broken.contains("class=\"problem\""))

        // One box per cascade box in the store; confirmed ones styled apart from rejected ones.
        let boxes = library.boxCounts
        #expect(boxes.all > 0, "the samples should give the cascade something to find")
        #expect(Self.occurrences(of: "<div class=\"box ", in: html) == boxes.all)
        #expect(Self.occurrences(of: "<div class=\"box confirmed\"", in: html) == boxes.confirmed)
        #expect(Self.occurrences(of: "<div class=\"box rejected\"", in: html) == boxes.all - boxes.confirmed)

        // The summary counts the photos and the faces.
        #expect(html.contains("<li><b>\(library.photos.count)</b><small>photos</small></li>"))
        #expect(html.contains("<li><b>\(boxes.confirmed)</b><small>faces in "))
        #expect(html.contains("<li><b>1</b><small>undecodable</small></li>"))
        #expect(html.contains("spent analysing"))
    }

    @Test func boxesArePlacedInPercentOfTheAnalysedImage() throws {
        let library = try Library()
        let (result, html) = try library.report()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        var checked = 0
        for (path, verdict) in library.verdicts {
            guard let size = verdict["analysisSize"] as? [String: Any], let width = size["width"] as? Int, let height = size["height"] as? Int,
                  let faces = verdict["faces"] as? [[String: Any]], let face = faces.first,
                  let region = face["region"] as? [String: Any], let x = region["x"] as? Int, let y = region["y"] as? Int,
                  let w = region["width"] as? Int, let h = region["height"] as? Int,
                  x >= 0, y >= 0, x + w <= width, y + h <= height else { continue }
            let card = try #require(Self.card(for: path.replacingOccurrences(of: "&", with: "&amp;")
                .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
                .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;"), in: html))
            let style = String(format: "left:%.3f%%;top:%.3f%%;width:%.3f%%;height:%.3f%%",
                               Double(x) * 100 / Double(width), Double(y) * 100 / Double(height),
                               Double(w) * 100 / Double(width), Double(h) * 100 / Double(height))
            #expect(card.contains(style), "\(path): no box at \(style)")
            checked += 1
        }
        #expect(checked > 0)
    }

    @Test func thumbnailsFitTheAskedSize() throws {
        let library = try Library()
        let (result, html) = try library.report(extra: ["--thumbnail-size", "64"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let thumbnails = Self.thumbnails(in: html)
        #expect(thumbnails.count == library.photos.count - 1)
        // The samples are 120 pixels on their short side, so each is shrunk to exactly 64 on its long side.
        for thumbnail in thumbnails {
            #expect(max(thumbnail.width, thumbnail.height) == 64)
        }
        #expect(html.contains("--thumb: 64px"))
    }

    @Test func thumbnailsAreUprightWhateverTheExifOrientation() throws {
        let ws = try Workspace()
        // The real samples, whose rotated copies carry EXIF orientations 3, 6 and 8.
        for name in ["hopper.jpg", "hopper-orientation-6.jpg", "astronaut.png", "astronaut-orientation-3.jpg", "astronaut-orientation-8.jpg"] {
            try ws.write(name, bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: CLI.sample(name)))))
        }
        let out = ws.root.appendingPathComponent("report.html").path
        let result = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out, "--thumbnail-size", "96"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let html = try String(contentsOfFile: out, encoding: .utf8)
        func thumbnail(_ name: String) throws -> Image {
            let card = try #require(Self.card(for: name, in: html))
            let thumb = try #require(Self.thumbnails(in: "<article " + card).first)
            return try PhotoDecoder.decode(bytes: thumb.jpeg, options: DecodeOptions(output: .rgb))
        }
        for (rotated, upright) in [("hopper-orientation-6.jpg", "hopper.jpg"), ("astronaut-orientation-3.jpg", "astronaut.png"),
                                   ("astronaut-orientation-8.jpg", "astronaut.png")] {
            let a = try thumbnail(rotated), b = try thumbnail(upright)
            guard a.width == b.width && a.height == b.height else {
                Issue.record("\(rotated) is \(a.width)x\(a.height), \(upright) \(b.width)x\(b.height)")
                continue
            }
            let difference = zip(a.pixels, b.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
            // JPEG noise only: a photo left on its side or upside down differs by tens per channel.
            #expect(Double(difference) / Double(a.pixels.count) < 8, "\(rotated) does not look like \(upright)")
        }
    }

    @Test func aLibraryNotYetAnalysedShowsEveryPhotoWaiting() throws {
        let library = try Library(analysed: false)
        let (result, html) = try library.report()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Self.occurrences(of: "<article class=\"card\" data-label=\"pending\" data-state=\"discovered\"", in: html) == library.photos.count)
        #expect(Self.occurrences(of: "<div class=\"box ", in: html) == 0)
        // Without a verdict, the broken photo's placeholder carries the decoder's reason itself.
        let broken = try #require(Self.card(for: Self.brokenName, in: html))
        #expect(broken.contains("no preview: "))
    }

    @Test(arguments: [
        (["--thumbnail-size", "10"], "--thumbnail-size"),
        (["--thumbnail-size", "big"], "--thumbnail-size"),
        (["--slots", "0"], "--slots"),
        (["--no-such-flag"], "--no-such-flag"),
    ])
    func badOptionsAreUsageErrors(extra: [String], mentioned: String) throws {
        let ws = try Workspace()
        let result = try CLI.run(["report", ws.library, "--store", ws.store, "--out", ws.root.appendingPathComponent("r.html").path] + extra)
        #expect(result.status == 64)
        #expect(result.stderr.contains(mentioned), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ws.root.appendingPathComponent("r.html").path))
    }

    @Test func outIsRequired() throws {
        let ws = try Workspace()
        let result = try CLI.run(["report", ws.library, "--store", ws.store])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--out"), "\(result.stderr)")
    }

    @Test func anUnwritableDestinationFailsWithoutLeavingAFile() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let out = ws.root.appendingPathComponent("no-such-folder/report.html").path
        let result = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no-such-folder"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// Banks a made-up verdict on every photo of `ws`: `hopper.jpg` gets one confirmed box and one
    /// rejected box that crosses the right and bottom edges, the rest no boxes. Each took 10 ms,
    /// hopper 12.5 ms. Then hopper is recorded uploaded and camera failed. Returns hopper's size.
    static func bankMadeUpVerdicts(in ws: Workspace) throws -> (width: Int, height: Int) {
        let store = try AssetStore(root: ws.library, path: ws.store)
        _ = try store.scan()
        let hopperSize = try PhotoDecoder.probe(ws.path("hopper.jpg")).uprightSize
        for record in try store.claimUnanalyzed(limit: 1000) {
            let header = try PhotoDecoder.probe(ws.path(record.path)).uprightSize
            var faces: [Verdict.Face] = []
            if record.path == "hopper.jpg" {
                let (w, h) = header
                faces = [Verdict.Face(region: FaceRegion(x: w / 4, y: h / 5, width: w / 2, height: w / 2, detectorScore: 0.81,
                                                         keypoints: Array(repeating: 1, count: 12), secondLooks: [0.93, 0.88]),
                                      probability: 0.97, confirmed: true),
                         Verdict.Face(region: FaceRegion(x: w - 20, y: h - 30, width: 40, height: 40), probability: 0.12, confirmed: false)]
            }
            let verdict = Verdict(faces: faces, model: "made-up@1", cascade: "made-up-cascade",
                                  analysisSize: Verdict.Size(width: header.width, height: header.height),
                                  milliseconds: record.path == "hopper.jpg" ? 12.5 : 10)
            let banked = BankedVerdict(json: try verdict.json(), label: verdict.label.rawValue,
                                       faceCount: faces.filter(\.confirmed).count, score: Double(verdict.score))
            #expect(try store.bankVerdict(banked, for: record))
            if record.path == "hopper.jpg" { #expect(try store.recordUploaded(record, serverID: "obj<1>&\"x'")) }
            if record.path == "camera.jpg" {
                try store.recordUploadFailure(record, attempts: 5, message: "permanent: HTTP 401 <unauthorized>", failed: true)
            }
        }
        return hopperSize
    }

    @Test func everyStateAndKindOfBoxIsShownAsTheStoreHasIt() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let (w, h) = try Self.bankMadeUpVerdicts(in: ws)
        let out = ws.root.appendingPathComponent("report.html").path
        let result = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let html = try String(contentsOfFile: out, encoding: .utf8)

        let hopper = try #require(Self.card(for: "hopper.jpg", in: html))
        #expect(hopper.contains("data-label=\"faces\" data-state=\"uploaded\""))
        #expect(hopper.contains("server id <code>obj&lt;1&gt;&amp;&quot;x&#39;</code>"))
        #expect(Self.occurrences(of: "<div class=\"box confirmed\"", in: hopper) == 1)
        #expect(Self.occurrences(of: "<div class=\"box rejected\"", in: hopper) == 1)
        // The rejected box is clipped at the image's right and bottom edges.
        let clipped = String(format: "left:%.3f%%;top:%.3f%%;width:%.3f%%;height:%.3f%%",
                             Double(w - 20) * 100 / Double(w), Double(h - 30) * 100 / Double(h),
                             20 * 100 / Double(w), 30 * 100 / Double(h))
        #expect(hopper.contains("<div class=\"box rejected\" style=\"\(clipped)\""), "\(hopper)")
        #expect(hopper.contains("score 0.970 · 1 face, 1 rejected"))
        // Hovering a BlazeFace box tells what the model weighed; a box without keypoints gets only p.
        #expect(hopper.contains("title=\"confirmed p=0.97, detector 0.81, second looks 0.93 0.88\""), "\(hopper)")
        #expect(hopper.contains("title=\"rejected p=0.12\""))

        let camera = try #require(Self.card(for: "camera.jpg", in: html))
        #expect(camera.contains("data-label=\"no-faces\" data-state=\"failed\""))
        #expect(camera.contains("5 failed attempts"))
        #expect(camera.contains("<p class=\"problem\">upload: permanent: HTTP 401 &lt;unauthorized&gt;</p>"))

        #expect(Self.occurrences(of: "data-state=\"analyzed\"", in: html) == photos.count - 2)
        #expect(html.contains("<li><b>1</b><small>uploaded</small></li>"))
        #expect(html.contains("<li><b>1</b><small>upload failed</small></li>"))
        #expect(html.contains("<li><b>1</b><small>faces in 1 photo</small></li>"))
        #expect(html.contains("<li><b>1</b><small>boxes rejected</small></li>"))
        // 10 photos in 102.5 ms of analysis: 97.6 a second, 10 ms each.
        #expect(html.contains("<li><b>97.6/s</b><small>per slot (10 ms a photo)</small></li>"), "\(html.prefix(6000))")
        #expect(html.contains("<option value=\"uploaded\">uploaded (1)</option>"))
        #expect(html.contains("<option value=\"faces\">faces (1)</option>"))
        #expect(html.contains("<code>made-up@1</code>"))
    }

    // MARK: In a real browser

    /// Runs `Scripts/check-report` (which installs Chromium with apt-get when it is missing) on a page.
    static func checkInBrowser(_ html: String, in directory: URL, filter: String? = nil) throws -> (status: Int32, output: String, dom: String, screenshot: String) {
        let dom = directory.appendingPathComponent("report.dom.html").path
        let screenshot = directory.appendingPathComponent("report.png").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [CLI.repository.appendingPathComponent("Scripts/check-report").path, "--html", html,
                             "--out", directory.path, "--dom", dom, "--screenshot", screenshot] + (filter.map { ["--filter", $0] } ?? [])
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text, (try? String(contentsOfFile: dom, encoding: .utf8)) ?? "", screenshot)
    }

    /// The value of `name` on the dumped DOM's `<body>`.
    static func bodyAttribute(_ name: String, in dom: String) -> String? {
        guard let body = dom.range(of: "<body"), let end = dom[body.upperBound...].firstIndex(of: ">") else { return nil }
        let tag = dom[body.upperBound..<end]
        guard let start = tag.range(of: " \(name)=\"") else { return nil }
        return tag[start.upperBound...].split(separator: "\"", maxSplits: 1).first.map(String.init)
    }

    @Test func chromiumLoadsThePageWithEveryCardBoxAndThumbnail() throws {
        let library = try Library()
        let (result, _) = try library.report()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let html = library.ws.root.appendingPathComponent("report.html").path
        let browser = library.ws.root.appendingPathComponent("browser")
        let check = try Self.checkInBrowser(html, in: browser)
        try #require(check.status == 0, "Scripts/check-report failed (status \(check.status)):\n\(check.output)")

        #expect(Self.bodyAttribute("data-check", in: check.dom) == "loaded")
        #expect(Self.bodyAttribute("data-cards", in: check.dom) == "\(library.photos.count)")
        #expect(Self.bodyAttribute("data-boxes", in: check.dom) == "\(library.boxCounts.all)")
        #expect(Self.bodyAttribute("data-confirmed-boxes", in: check.dom) == "\(library.boxCounts.confirmed)")
        // Chromium decoded every embedded JPEG.
        #expect(Self.bodyAttribute("data-thumbnails", in: check.dom) == "\(library.photos.count - 1)")
        #expect(Self.bodyAttribute("data-thumbnails-loaded", in: check.dom) == "\(library.photos.count - 1)")
        #expect(Self.bodyAttribute("data-shown", in: check.dom) == "\(library.photos.count)")
        // The awkward name is one text node in the page, not markup (the DOM serialiser escapes
        // only &, < and > in text).
        #expect(check.dom.contains("<h2 class=\"name\">a&lt;b&gt;&amp;\"c'.jpg</h2>"))

        // The screenshot is a real PNG of the browser window.
        let picture = try PhotoDecoder.decode(check.screenshot, options: DecodeOptions(output: .rgb))
        #expect(picture.width == 1280 && picture.height == 2400)
    }

    @Test func theLabelFilterHidesEveryOtherCardInChromium() throws {
        let library = try Library()
        let (result, _) = try library.report()
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let html = library.ws.root.appendingPathComponent("report.html").path
        let check = try Self.checkInBrowser(html, in: library.ws.root.appendingPathComponent("filtered"), filter: "label=error")
        try #require(check.status == 0, "Scripts/check-report failed (status \(check.status)):\n\(check.output)")
        #expect(Self.bodyAttribute("data-shown", in: check.dom) == "1")
        let openingTags = check.dom.components(separatedBy: "<article ").dropFirst().map { $0.prefix { $0 != ">" } }
        #expect(openingTags.count == library.photos.count)
        #expect(openingTags.filter { $0.contains(" hidden=\"\"") }.count == library.photos.count - 1)
        let shown = try #require(Self.card(for: Self.brokenName, in: check.dom))
        #expect(!shown.contains("hidden"))
    }
}

/// A file that is not a photo is labelled as such in the report, not `error`,
/// and is not counted as undecodable.
@Suite struct ReportUnanalysableCLITests {
    @Test func aVideoIsNotAPhotoNotAnError() throws {
        let ws = try Workspace()
        try ws.write("cat.jpg", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg")))))
        try ws.write("clip.mov", bytes: [0, 0, 0, 0x14] + Array("ftypqt  ".utf8) + [UInt8](repeating: 0, count: 64))
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store, "--analysis-size", "96"]).status == 0)
        let out = ws.root.appendingPathComponent("report.html").path
        let report = try CLI.run(["report", ws.library, "--store", ws.store, "--out", out])
        #expect(report.status == 0, "\(report.stderr)")
        let html = try String(contentsOfFile: out, encoding: .utf8)
        let card = try #require(ReportCLITests.card(for: "clip.mov", in: html))
        #expect(card.contains("data-label=\"unanalysable\""), "\(card)")
        #expect(html.contains("<li><b>0</b><small>undecodable</small></li>"))
        #expect(html.contains("<li><b>1</b><small>not photos (unanalysable)</small></li>"))
    }
}
