import AssetStore
import FaceAnalysis
import Foundation
import PhotoDecoding
import SystemSupport

/// The HTML of a page of cards: the single file of a small library, or one page of a paged
/// report. Self-contained (inline CSS and script, thumbnails as `data:` URIs) and written in
/// pieces, so a page streams to disk one batch of thumbnails at a time.
///
/// Order: `head`, then `summary` (the single file) or `pageHeader` (a page), then one `card` per
/// photo, then `foot`. Every text that comes from a file name, the store or a verdict goes
/// through `Markup.escape`.
enum ReportPage {
    /// The document's start: doctype, title and style. `thumbnailSize` sets the grid's cell size.
    static func head(title: String, thumbnailSize: Int) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="generator" content="photodrain \(PhotoDrainCLI.version)">
        <title>\(Markup.escape(title))</title>
        <style>
        \(ReportStyle.css(thumbnailSize: thumbnailSize))</style>
        </head>
        <body data-check="pending">

        """
    }

    /// The single file's header: where the library is, the totals, and the filters with their
    /// counts; then the start of the cards' grid.
    static func summary(_ summary: ReportSummary, library: String, store: String, generatedAt: String) -> String {
        var html = "<header>\n<h1>PhotoDrain report</h1>\n"
        html += whereLine(summary, library: library, store: store, generatedAt: generatedAt)
        html += stats(summary)
        html += peopleLink(summary.people, href: summary.people?.hrefFromIndex)
        html += controls(summary, shown: "<span>showing <b id=\"shown\">\(summary.photos)</b> of \(summary.photos)</span>\n", legend: true)
        html += "</header>\n<main id=\"cards\">\n"
        if summary.photos == 0 {
            html += "<p class=\"empty\">No photos in this library yet.</p>\n"
        }
        return html
    }

    /// The line under the title: the library, the store, when, and the models the verdicts name.
    static func whereLine(_ summary: ReportSummary, library: String, store: String, generatedAt: String) -> String {
        var html = "<p class=\"where\"><code>\(Markup.escape(library))</code> · store <code>\(Markup.escape(store))</code> · \(Markup.escape(generatedAt))"
        if !summary.models.isEmpty {
            html += " · " + summary.models.map { "<code>\(Markup.escape($0))</code>" }.joined(separator: ", ")
        }
        return html + "</p>\n"
    }

    /// The totals: photos by state, undecodable, faces, rejected boxes, time spent analysing.
    static func stats(_ summary: ReportSummary) -> String {
        var stats: [(value: String, caption: String)] = [
            ("\(summary.photos)", "photos"),
            ("\(summary.byState[.discovered] ?? 0)", "waiting for analysis"),
            ("\(summary.analysedNotUploaded)", "analysed, not uploaded"),
            ("\(summary.byState[.uploaded] ?? 0)", "uploaded"),
            ("\(summary.byState[.failed] ?? 0)", "upload failed"),
            ("\(summary.byLabel[.error] ?? 0)", "undecodable"),
            ("\(summary.confirmedFaces)", "faces in \(summary.photosWithFaces) photo\(summary.photosWithFaces == 1 ? "" : "s")"),
            ("\(summary.rejectedBoxes)", "boxes rejected"),
            (formatSeconds(summary.analysisMilliseconds / 1000), "spent analysing"),
        ]
        if let notPhotos = summary.byLabel[.unanalysable], notPhotos > 0 {
            stats.insert(("\(notPhotos)", "not photos (unanalysable)"), at: stats.count - 3)
        }
        if let unverified = summary.byState[.uploadedUnverified], unverified > 0 {
            // Shown only when there are some: marks the destination gave no proof for.
            stats.insert(("\(unverified)", "uploaded, unverified"), at: 4)
        }
        let freed = summary.freed
        if freed.inTrash + freed.gone + freed.restored > 0 {
            // Shown only once free-space has removed something.
            stats.append((formatBytes(Int(freed.freedBytes)), "freed by free-space"))
            stats.append(("\(freed.inTrash)", "in the trash (\(formatBytes(Int(freed.trashBytes))))"))
        }
        if let rate = summary.photosPerSecond, let mean = summary.meanMilliseconds {
            stats.append((String(format: "%.1f/s", rate), String(format: "per slot (%.0f ms a photo)", mean)))
        }
        var html = "<ul class=\"stats\" id=\"summary\">\n"
        for stat in stats {
            html += "<li><b>\(Markup.escape(stat.value))</b><small>\(Markup.escape(stat.caption))</small></li>\n"
        }
        return html + "</ul>\n"
    }

    /// The filters: label and state (each option with its count in `summary`) and a search on
    /// the path; then `shown` (which holds `<b id="shown">`) and, for pages of cards, the legend.
    static func controls(_ summary: ReportSummary, shown: String, legend: Bool) -> String {
        var html = "<div class=\"controls\">\n"
        html += "<label>Label <select id=\"filter-label\"><option value=\"\">all (\(summary.photos))</option>"
        for label in ReportEntry.Label.allCases {
            html += "<option value=\"\(label.rawValue)\">\(label.title) (\(summary.byLabel[label] ?? 0))</option>"
        }
        html += "</select></label>\n"
        html += "<label>State <select id=\"filter-state\"><option value=\"\">all (\(summary.photos))</option>"
        for state in AssetRecord.State.allCases {
            html += "<option value=\"\(state.rawValue)\">\(stateTitle(state)) (\(summary.byState[state] ?? 0))</option>"
        }
        html += "</select></label>\n"
        html += "<label>Path <input type=\"search\" id=\"filter-text\" placeholder=\"contains...\" autocomplete=\"off\"></label>\n"
        html += shown
        if legend {
            html += "<span class=\"legend\"><span class=\"confirmed\"></span>confirmed face<span class=\"rejected\"></span>rejected box</span>\n"
        }
        return html + "</div>\n"
    }

    /// The header of page `number` of a paged report: where it sits among the pages, links to the
    /// index and its neighbours (which carry the filter along), this page's totals and filters;
    /// then the start of its cards' grid.
    static func pageHeader(number: Int, layout: ReportLayout, summary: ReportSummary, library: String) -> String {
        let range = layout.photoRange(ofPage: number)
        var html = "<header>\n<h1>PhotoDrain report: page \(number) of \(layout.pageCount)</h1>\n"
        html += "<p class=\"where\"><code>\(Markup.escape(library))</code> · photos \(range.lowerBound + 1)–\(range.upperBound) of \(layout.photos), by path</p>\n"
        html += "<nav class=\"pages\">" + navLink(layout.indexHrefFromPage, "index: every page, filters across the library", rel: "index")
        if number > 1 { html += navLink(ReportLayout.pageFileName(number - 1), "← page \(number - 1)", rel: "prev") }
        html += "<span class=\"here\">page \(number)</span>"
        if number < layout.pageCount { html += navLink(ReportLayout.pageFileName(number + 1), "page \(number + 1) →", rel: "next") }
        html += "</nav>\n"
        html += stats(summary)
        html += peopleLink(summary.people, href: summary.people?.hrefFromPage)
        html += controls(summary, shown: "<span>showing <b id=\"shown\">\(summary.photos)</b> of \(summary.photos) on this page</span>\n", legend: true)
        return html + "</header>\n<main id=\"cards\">\n"
    }

    /// The line under the totals that leads to the people page; empty without one.
    static func peopleLink(_ link: ReportSummary.PeopleLink?, href: String?) -> String {
        guard let link, let href else { return "" }
        let people = "\(link.people) \(link.people == 1 ? "person" : "people")"
        return "<p class=\"people-link\"><a id=\"people-link\" href=\"\(Markup.escape(href))\">\(people)</a> in \(link.faces) face\(link.faces == 1 ? "" : "s"): " +
            "their faces, each linked to its photo</p>\n"
    }

    /// A link whose script keeps the page's filter in its fragment (`data-href` is the bare target).
    static func navLink(_ href: String, _ text: String, rel: String) -> String {
        "<a rel=\"\(rel)\" href=\"\(Markup.escape(href))\" data-href=\"\(Markup.escape(href))\">\(Markup.escape(text))</a>"
    }

    /// One photo's card: the thumbnail with its boxes (or a placeholder with the error), the
    /// label and score, the upload state and server id, and every error the photo has. `number` is the
    /// photo's place in the library (1-based, by path): the card's id is `photo-<number>`, which
    /// links from the index aim at (`page-0003.html#photo=612`).
    static func card(_ entry: ReportEntry, number: Int, thumbnail: Result<Thumbnail, DecodeError>) -> String {
        let record = entry.record
        let label = entry.label
        let state = record.state
        var html = "<article class=\"card\" data-label=\"\(label.rawValue)\" data-state=\"\(state.rawValue)\" data-path=\"\(Markup.escape(record.path))\" id=\"photo-\(number)\">\n"
        html += "<div class=\"frame\">"
        var problems: [String] = []
        if let problem = entry.analysisProblem { problems.append(problem) }
        switch thumbnail {
        case .success(let thumb):
            html += "<div class=\"photo\"><img class=\"thumb\" width=\"\(thumb.width)\" height=\"\(thumb.height)\" alt=\"\(Markup.escape(record.path))\" src=\"\(thumb.dataURI)\">"
            if let verdict = entry.verdict, let size = verdict.analysisSize, size.width > 0, size.height > 0 {
                for face in verdict.faces { html += box(face, in: size) }
            }
            html += "</div>"
        case .failure(let error):
            let reason = "\(error.code.rawValue): \(error.message)"
            html += "<div class=\"placeholder\"><strong>no preview</strong>\(Markup.escape(reason))</div>"
            // An undecodable photo's verdict already says why; say it again only when it differs.
            if entry.analysisProblem == nil { problems.append("no preview: \(reason)") }
        }
        html += "</div>\n<div class=\"meta\">\n<h2 class=\"name\">\(Markup.escape(record.path))</h2>\n"
        html += "<p><span class=\"tag \(label.rawValue)\">\(label.title)</span>"
        if let verdict = entry.verdict, verdict.label != .error, verdict.label != .unanalysable {
            html += " score \(String(format: "%.3f", verdict.score))"
            html += " · \(entry.confirmedFaces) face\(entry.confirmedFaces == 1 ? "" : "s")"
            if entry.rejectedBoxes > 0 { html += ", \(entry.rejectedBoxes) rejected" }
        }
        html += "</p>\n"
        if !entry.people.isEmpty, let page = entry.peoplePage {
            let links = entry.people.map { tag in
                tag.onPage ? "<a href=\"\(Markup.escape(page))#person-\(tag.id)\">\(Markup.escape(tag.title))</a>" : Markup.escape(tag.title)
            }
            html += "<p class=\"people\">\(links.joined(separator: ", "))</p>\n"
        }
        html += "<p><span class=\"tag \(state.rawValue)\">\(stateTitle(state))</span>"
        if let serverID = record.serverID { html += " server id <code>\(Markup.escape(serverID))</code>" }
        if record.attempts > 0 { html += " · \(record.attempts) failed attempt\(record.attempts == 1 ? "" : "s")" }
        html += "</p>\n"
        if let verdict = entry.verdict {
            var line = String(format: "analysed in %.1f ms", verdict.milliseconds)
            if let size = verdict.analysisSize { line += " at \(size.width)×\(size.height)" }
            if let width = record.width, let height = record.height { line += " · photo \(width)×\(height)" }
            html += "<p class=\"muted\">\(Markup.escape(line))</p>\n"
        }
        if let lastError = record.lastError { problems.append("upload: \(lastError)") }
        for problem in problems { html += "<p class=\"problem\">\(Markup.escape(problem))</p>\n" }
        html += "</div>\n</article>\n"
        return html
    }

    /// A face box over the thumbnail, positioned in percent of the analysed image so it lands on
    /// the same place at any thumbnail size; clipped to the image.
    static func box(_ face: Verdict.Face, in size: Verdict.Size) -> String {
        let r = face.region
        let left = min(max(r.x, 0), size.width), top = min(max(r.y, 0), size.height)
        let right = min(max(r.x + r.width, left), size.width), bottom = min(max(r.y + r.height, top), size.height)
        func percent(_ value: Int, of whole: Int) -> String { String(format: "%.3f%%", Double(value) * 100 / Double(whole)) }
        let style = "left:\(percent(left, of: size.width));top:\(percent(top, of: size.height));" +
            "width:\(percent(right - left, of: size.width));height:\(percent(bottom - top, of: size.height))"
        let kind = face.confirmed ? "confirmed" : "rejected"
        let probability = String(format: "%.2f", face.probability)
        // BlazeFace's own score and its second looks (what the verdict model weighed), on hover.
        var title = "\(kind) p=\(probability)"
        if r.keypoints != nil {
            title += String(format: ", detector %.2f", r.detectorScore)
            if let looks = r.secondLooks { title += ", second looks " + looks.map { String(format: "%.2f", $0) }.joined(separator: " ") }
        }
        return "<div class=\"box \(kind)\" style=\"\(style)\" title=\"\(title)\"><span>\(probability)</span></div>"
    }

    /// The end of a page of cards (the single file or one page of a paged report): the filter
    /// script, and the load handler that records on `<body>` what the browser saw (cards, boxes,
    /// thumbnails that decoded) for `Scripts/check-report`.
    static func foot() -> String {
        "</main>\n<script>\n" + ReportScript.cards + "</script>\n</body>\n</html>\n"
    }

    /// The words the page uses for an upload state.
    static func stateTitle(_ state: AssetRecord.State) -> String {
        switch state {
        case .discovered: "waiting for analysis"
        case .analyzed: "analysed, not uploaded"
        case .uploaded: "uploaded"
        case .uploadedUnverified: "uploaded, unverified"
        case .failed: "upload failed"
        }
    }

    /// `950 ms`, `12.3 s`, `4:05` (minutes), `1:02:03`.
    static func formatSeconds(_ seconds: Double) -> String {
        if seconds < 1 { return String(format: "%.0f ms", seconds * 1000) }
        if seconds < 60 { return String(format: "%.1f s", seconds) }
        return formatDuration(seconds)
    }
}
