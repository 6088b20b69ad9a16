import AssetStore
import Foundation
import PhotoDecoding
import SystemSupport

/// `photodrain report DIR --out FILE.html`: a contact sheet of the library with face boxes and
/// verdicts; one file for a small library, an index with pages for a big one (`ReportLayout`).
enum ReportCommand: Command {
    /// Photos per page unless `--page-size` says otherwise. A page of 200 photos of 640x480 at the
    /// default thumbnail size is about 3 MB; headless Chromium fires its load event in about 0.3 s
    /// and opens it, start-up included, in under 2 s on a shared 2-core machine (250 photos took
    /// 0.25 s longer; BENCHMARKS.md, "Report at library scale").
    static let defaultPageSize = 200

    /// Usage, options and help of `photodrain report`.
    static let spec = CommandSpec(
        name: "report",
        abstract: "Write an HTML contact sheet of a library: thumbnails with face boxes, verdicts, upload state.",
        arguments: "DIR",
        discussion: """
        Scans DIR (as analyze does) and writes HTML that needs no network: every photo as a
        thumbnail made by PhotoDrain's own decoder and embedded in the page, with the cascade's
        boxes drawn over it (solid green: confirmed by the classifier; dashed red: rejected), its
        label and score, upload state and server id, and every error it has. Photos that cannot be
        decoded get a card with the reason. The top sums it up (photos by state, faces, time
        spent analysing, throughput) and filters the cards by label, state and a text in the
        path; a link such as report.html#label=faces&state=analyzed&q=2019/ opens it filtered.

        One file or pages. A library of up to --page-size photos (default \(defaultPageSize)) gets one
        self-contained file, --out FILE.html. A bigger one would make a file too big for a
        browser to open (5,000 photos came to 117 MB), so it is written as pages: FILE.html
        becomes an index, and the photos, in path order and --page-size to a page, go into
        FILE-pages/page-0001.html, page-0002.html... beside it. Give --out a folder (report/, or
        one that exists) for report/index.html and report/page-0001.html... whatever the size;
        --single-file keeps one file whatever the size. The index holds the totals, the same
        filters, and a table of the pages with their counts by label and state. A filter there
        searches every photo, shows which pages hold matches and lists the matching photos as
        links that open their page filtered the same way, at the photo's card. Each page is
        self-contained too, links to the index and its neighbours, and keeps the filter as you
        move. Every file is written to a temporary file and renamed into place, the index last.
        Pages an earlier report wrote that the new one does not reach (it has fewer pages, or is
        one file again) are removed; nothing else in the folder is touched.
        Undecodable photos are shown, not failed on: they do not change the exit status.

        People. When analysis found people (see photodrain people), faces analysed since the
        last listing join theirs first, and a people page is written beside the report
        (FILE-people.html beside a single file, people.html among the pages): each person,
        named ones first, then by number of faces, with up to \(ReportPeople.cropsPerPerson) face crops, each a
        link to its photo's card; each card names its photo's people, linked to their section.
        The page holds the first \(ReportPeople.maxPeople) people and about \(ReportPeople.cropBudget) crops (past those, a
        person shows one face), so it stays small enough to open; photodrain people lists them all.
        """ + LibraryOptions.scanDiscussion,
        options: [
            .option("out", "FILE.html|DIR/", "Where to write: a file (an index, with pages beside it, past --page-size photos) or a folder (required)."),
            .option("page-size", "N", "Photos per page; a library of more is written as pages, 1...100000.", default: "\(defaultPageSize)"),
            .flag("single-file", "One file whatever the size of the library (a big library makes a page a browser struggles to open)."),
            LibraryOptions.store, LibraryOptions.include, LibraryOptions.exclude, LibraryOptions.rescan,
            .option("thumbnail-size", "PIXELS", "Longest side of each thumbnail, 32...2048.", default: "320"),
            .option("slots", "N", "Thumbnails made at once.", default: "the number of cores"),
        ],
        positionals: (1, 1),
        examples: [
            ("photodrain report ~/Pictures --out report.html", "after analyze or drain: look at what was found"),
            ("photodrain report ~/Pictures --out report/", "report/index.html and pages of \(defaultPageSize) photos, whatever the size"),
            ("photodrain report ~/Pictures --out /tmp/small.html --thumbnail-size 160", "lighter pages for a big library"),
            ("photodrain report ~/Pictures --out 2019.html --include '2019/*'", "only the photos under 2019/ (fnmatch(3) globs, as analyze takes)"),
        ],
        exitCodes: [(0, "the report was written"), (1, "failure (store unreadable, a page could not be written)"),
                    (64, "usage error")]
    )

    /// Scans the library, then writes the single file or the pages and their index. Throws
    /// `UsageError` for bad options, the store's error when it cannot be read, `ReportFileError`
    /// when a page cannot be written.
    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        guard let out = arguments.string("out"), !out.isEmpty else {
            throw UsageError("--out FILE.html (or a folder, DIR/) is required", command: spec.name)
        }
        let size = try arguments.int("thumbnail-size", default: 320, range: 32...2048)
        let slots = try arguments.int("slots", default: max(1, ProcessInfo.processInfo.activeProcessorCount), range: 1...64)
        let pageSize = try arguments.int("page-size", default: defaultPageSize, range: 1...100_000)
        var isFolder: ObjCBool = false
        let outIsFolder = out.hasSuffix("/") || (FileManager.default.fileExists(atPath: out, isDirectory: &isFolder) && isFolder.boolValue)
        let request = try ReportLayout.Request(out: out, outIsFolder: outIsFolder, pageSize: pageSize, singleFile: arguments.flag("single-file"))
        let store = try LibraryOptions.open(arguments)
        // The .sqlite file alone holds everything once the command ends, whatever way it ends.
        defer { store.checkpoint() }
        let console = Console.shared

        let scan = try store.scan(full: arguments.flag("rescan"))
        for problem in scan.problems { console.err("photodrain report: skipped \(problem.path): \(problem.message)") }
        var entries = try store.assets().map(ReportEntry.init(record:))
        var counted = ReportSummary(entries: entries)
        counted.freed = try store.removalSummary()
        let generatedAt = isoTimestamp(Date().timeIntervalSince1970) ?? ""
        let layout = request.layout(photos: entries.count)
        let library = store.root, storePath = store.path

        // People as `photodrain people` lists them: faces analysed since the last listing join
        // theirs first. A store that cannot be written still shows the people it has.
        do {
            _ = try store.clusterFaces()
        } catch {
            console.err("photodrain report: faces analysed since the last listing are not in a person yet: \(error.message)")
        }
        let people = ReportPeople.ordered(try store.people())
        let peoplePlace = ReportPeople.place(layout, out: out)
        if !people.isEmpty {
            counted.people = ReportSummary.PeopleLink(people: people.count, faces: people.reduce(0) { $0 + $1.record.faces.count },
                                                      hrefFromIndex: peoplePlace.hrefFromIndex, hrefFromPage: peoplePlace.hrefFromPage)
            let byPhoto = ReportPeople.byPhoto(people)
            let href = layout.shape == .singleFile ? peoplePlace.hrefFromIndex : peoplePlace.hrefFromPage
            for i in entries.indices {
                guard let tags = byPhoto[entries[i].record.path] else { continue }
                entries[i].people = tags
                entries[i].peoplePage = href
            }
        }
        let summary = counted
        let reportEntries = entries
        let cropBar = people.isEmpty ? nil : ProgressBar(title: "faces", total: people.prefix(ReportPeople.maxPeople).reduce(0) { $0 + $1.shown.count })

        let bar = ProgressBar(title: "thumbnails", total: entries.count)
        // Decoding is blocking CPU work: it gets its own thread, not the cooperative pool.
        let (outcome, peopleTally) = try await onOwnThreadUntilDone("photodrain-report") {
            Result { () throws -> (PagedReport.Outcome, ReportPeople.Tally?) in
                let outcome: PagedReport.Outcome
                switch layout.shape {
                case .singleFile:
                    outcome = try writeSingleFile(reportEntries, to: out, summary: summary, library: library, store: storePath,
                                                  generatedAt: generatedAt, size: size, slots: slots, progress: bar)
                case .paged:
                    outcome = try PagedReport.write(reportEntries, layout: layout, summary: summary, library: library, store: storePath,
                                                    generatedAt: generatedAt, size: size, slots: slots, progress: bar)
                }
                bar.finish()
                guard let cropBar else { return (outcome, nil) }
                let tally = try ReportPeople.write(people, place: peoplePlace, layout: layout, entries: reportEntries, library: library,
                                                   generatedAt: generatedAt, slots: slots, progress: cropBar)
                cropBar.finish()
                return (outcome, tally)
            }
        }.get()
        func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        let photos = "\(entries.count) photos (\(outcome.tally.thumbnails) thumbnails, \(outcome.tally.placeholders) without a preview), " +
            "\(summary.confirmedFaces) faces"
        defer {
            if let tally = peopleTally {
                let missing = tally.missing > 0 ? ", \(tally.missing) without a preview" : ""
                console.out("wrote \(peoplePlace.path): \(tally.people) \(tally.people == 1 ? "person" : "people"), \(tally.crops) face crops\(missing), \(megabytes(tally.bytes))")
            } else if ReportPeople.removeStale(peoplePlace.path) {
                console.out("removed \(peoplePlace.path): the library has no people now")
            }
        }
        switch layout.shape {
        case .singleFile:
            console.out("wrote \(out): \(photos), \(megabytes(outcome.bytes))")
            if let folder = layout.earlierPagesFolder {
                let removed = PagedReport.removePages(after: 0, in: folder)
                // Its people page went with the pages: the single file's is beside it.
                _ = ReportPeople.removeStale(folder + "/people.html")
                // The folder goes too when the pages were all it held.
                if removed > 0 && rmdir(folder) == 0 {
                    console.out("removed \(folder)/ and the \(removed) page\(removed == 1 ? "" : "s") an earlier report wrote there")
                } else if removed > 0 {
                    console.out("removed the \(removed) page\(removed == 1 ? "" : "s") an earlier report wrote in \(folder)/")
                }
            }
        case .paged:
            let pages = "\(layout.pageCount) page\(layout.pageCount == 1 ? "" : "s")"
            console.out("wrote \(layout.indexPath) and \(pages) of up to \(layout.pageSize) photos in \(layout.pagesFolder ?? ".")/: \(photos), " +
                        "\(megabytes(outcome.bytes)) in all, the largest file \(megabytes(outcome.largest.bytes))")
            if outcome.removedStalePages > 0 {
                console.out("removed \(outcome.removedStalePages) page\(outcome.removedStalePages == 1 ? "" : "s") of an earlier report past page \(layout.pageCount)")
            }
        }
        return .success
    }

    /// Writes the whole library as one self-contained page. Throws `ReportFileError` when it
    /// cannot be written.
    static func writeSingleFile(_ entries: [ReportEntry], to out: String, summary: ReportSummary, library: String, store: String,
                                generatedAt: String, size: Int, slots: Int, progress: ProgressBar) throws -> PagedReport.Outcome {
        let writer = try ReportFile(destination: out)
        try writer.append(ReportPage.head(title: "PhotoDrain report: \(library)", thumbnailSize: size))
        try writer.append(ReportPage.summary(summary, library: library, store: store, generatedAt: generatedAt))
        var outcome = PagedReport.Outcome()
        outcome.tally = try ReportCards.write(entries[...], firstNumber: 1, root: library, size: size, slots: slots, to: writer, progress: progress)
        try writer.append(ReportPage.foot())
        try writer.commit()
        outcome.add(writer)
        return outcome
    }
}
