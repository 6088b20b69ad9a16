#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Writes a paged report: each page as it is made (one batch of thumbnails in memory at a time),
/// then the index, then removes the pages an earlier, bigger report left behind.
///
/// Every file is written to a temporary file and renamed into place, the index last, so a
/// browser never sees half a page, and the index never names a page not yet written.
enum PagedReport {
    /// What was written.
    struct Outcome: Sendable {
        var tally = ReportCards.Tally()
        /// Bytes over the index and every page.
        var bytes = 0
        /// The biggest page (or the index, if bigger) and its size in bytes.
        var largest: (path: String, bytes: Int) = ("", 0)
        /// Pages of an earlier report removed.
        var removedStalePages = 0

        mutating func add(_ file: ReportFile) {
            bytes += file.bytesWritten
            if file.bytesWritten > largest.bytes { largest = (file.destination, file.bytesWritten) }
        }
    }

    /// Writes the pages and the index of `entries` (in path order) as `layout` says. Throws
    /// `ReportFileError` when a page, the index or the pages' folder cannot be written.
    static func write(_ entries: [ReportEntry], layout: ReportLayout, summary: ReportSummary, library: String, store: String,
                      generatedAt: String, size: Int, slots: Int, progress: ProgressBar) throws -> Outcome {
        if let folder = layout.pagesFolder, layout.createsPagesFolder { try makeFolder(folder) }
        var outcome = Outcome()
        var rows: [ReportIndex.PageRow] = []
        for number in stride(from: 1, through: layout.pageCount, by: 1) {
            let range = layout.photoRange(ofPage: number)
            let onPage = entries[range]
            var pageSummary = ReportSummary(entries: Array(onPage))
            pageSummary.people = summary.people
            let page = try ReportFile(destination: layout.pagePath(number))
            try page.append(ReportPage.head(title: "PhotoDrain report, page \(number) of \(layout.pageCount): \(library)", thumbnailSize: size))
            try page.append(ReportPage.pageHeader(number: number, layout: layout, summary: pageSummary, library: library))
            outcome.tally = outcome.tally + (try ReportCards.write(onPage, firstNumber: range.lowerBound + 1, root: library, size: size,
                                                                   slots: slots, to: page, progress: progress))
            try page.append(ReportPage.foot())
            try page.commit()
            outcome.add(page)
            rows.append(ReportIndex.PageRow(number: number, href: layout.pageHrefFromIndex(number), summary: pageSummary,
                                            firstPath: onPage.first?.record.path ?? "", lastPath: onPage.last?.record.path ?? ""))
        }
        let index = try ReportFile(destination: layout.indexPath)
        try index.append(ReportPage.head(title: "PhotoDrain report: \(library)", thumbnailSize: size))
        try index.append(try ReportIndex.page(summary, rows: rows, manifest: ReportManifest(entries: entries, layout: layout), layout: layout,
                                              library: library, store: store, generatedAt: generatedAt))
        try index.commit()
        outcome.add(index)
        if let folder = layout.pagesFolder { outcome.removedStalePages = removePages(after: layout.pageCount, in: folder) }
        return outcome
    }

    /// Makes `folder` when it is missing (not its parents: a mistyped path fails rather than
    /// growing a tree). Throws `ReportFileError` when it cannot be made or is not a folder.
    static func makeFolder(_ folder: String) throws {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) {
            guard isFolder.boolValue else { throw ReportFileError(message: "cannot write the pages into \(folder): it is a file, not a folder") }
            return
        }
        guard mkdir(folder, 0o755) == 0 || errno == EEXIST else {
            throw ReportFileError(message: "cannot make the folder \(folder): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes `page-NNNN.html` files numbered above `count` from `folder`: pages of an earlier
    /// report of more photos, which no link of the new index reaches. Only files PhotoDrain wrote
    /// (their `<meta name="generator">` says so) are removed; anything else is left alone.
    /// Returns how many it removed.
    static func removePages(after count: Int, in folder: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var removed = 0
        for name in names {
            guard let number = ReportLayout.pageNumber(inFileName: name), number > count else { continue }
            let path = folder + "/" + name
            guard isReportPage(path), unlink(path) == 0 else { continue }
            removed += 1
        }
        return removed
    }

    /// Whether the file at `path` starts as `ReportPage.head` writes a page.
    static func isReportPage(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let start = (try? handle.read(upToCount: 1024)) ?? Data()
        return String(decoding: start, as: UTF8.self).contains("<meta name=\"generator\" content=\"photodrain ")
    }
}
