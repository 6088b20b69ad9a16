import AssetStore
import SystemSupport

/// The index of a paged report: the library's totals and filters, the photos that match the
/// filter (as links to their cards), and a table of the pages with their counts by label and
/// state. No thumbnails: it stays small however big the library, the manifest of every photo
/// being a few dozen bytes each.
enum ReportIndex {
    /// One page as the index's table shows it.
    struct PageRow: Sendable {
        /// The page's number (1-based).
        let number: Int
        /// Its link from the index.
        let href: String
        /// Its photos counted.
        let summary: ReportSummary
        /// The first and last path on the page.
        let firstPath: String
        let lastPath: String
    }

    /// The whole index page after `ReportPage.head`. Throws when the manifest cannot be encoded.
    static func page(_ summary: ReportSummary, rows: [PageRow], manifest: ReportManifest, layout: ReportLayout,
                     library: String, store: String, generatedAt: String) throws -> String {
        var html = "<header>\n<h1>PhotoDrain report</h1>\n"
        html += ReportPage.whereLine(summary, library: library, store: store, generatedAt: generatedAt)
        html += ReportPage.stats(summary)
        html += ReportPage.peopleLink(summary.people, href: summary.people?.hrefFromIndex)
        let pages = "\(layout.pageCount) page\(layout.pageCount == 1 ? "" : "s")"
        html += ReportPage.controls(summary, shown: "<span><b id=\"shown\">\(summary.photos)</b> of \(summary.photos) photos match, " +
                                    "on <b id=\"pages-shown\">\(layout.pageCount)</b> of \(pages) (up to \(layout.pageSize) photos each)</span>\n",
                                    legend: false)
        html += "</header>\n<main class=\"index\">\n"
        html += "<section id=\"matches-section\" hidden>\n<h2>Matching photos</h2>\n<ol id=\"matches\"></ol>\n<p id=\"more\" class=\"muted\"></p>\n</section>\n"
        if rows.isEmpty {
            html += "<p class=\"empty\">No photos in this library yet.</p>\n"
        } else {
            html += table(rows, summary: summary)
        }
        html += "</main>\n<script type=\"application/json\" id=\"manifest\">" + (try manifest.scriptJSON()) + "</script>\n"
        html += "<script>\n" + ReportScript.index + "</script>\n</body>\n</html>\n"
        return html
    }

    /// The pages table: a row per page with its photos, the filter's matches (filled in by the
    /// script), its counts by label and by state, and the paths it runs from and to. Labels and
    /// states no photo of the library has get no column.
    static func table(_ rows: [PageRow], summary: ReportSummary) -> String {
        let labels = ReportEntry.Label.allCases.filter { (summary.byLabel[$0] ?? 0) > 0 }
        let states = AssetRecord.State.allCases.filter { (summary.byState[$0] ?? 0) > 0 }
        var html = "<section>\n<h2>Pages</h2>\n<table class=\"pages\" id=\"pages\">\n<thead><tr><th>page</th><th>photos</th><th>matches</th>"
        for label in labels { html += "<th><span class=\"tag \(label.rawValue)\">\(Markup.escape(label.title))</span></th>" }
        for state in states { html += "<th><span class=\"tag \(state.rawValue)\">\(Markup.escape(ReportPage.stateTitle(state)))</span></th>" }
        html += "<th>paths</th></tr></thead>\n<tbody>\n"
        for row in rows {
            html += "<tr data-page=\"\(row.number)\"><td>\(ReportPage.navLink(row.href, "page \(row.number)", rel: "section"))</td>"
            html += "<td>\(row.summary.photos)</td><td class=\"matches\">\(row.summary.photos)</td>"
            for label in labels { html += "<td data-label=\"\(label.rawValue)\">\(row.summary.byLabel[label] ?? 0)</td>" }
            for state in states { html += "<td data-state=\"\(state.rawValue)\">\(row.summary.byState[state] ?? 0)</td>" }
            html += "<td class=\"range\"><code>\(Markup.escape(row.firstPath))</code> … <code>\(Markup.escape(row.lastPath))</code></td></tr>\n"
        }
        return html + "</tbody>\n</table>\n</section>\n"
    }
}
