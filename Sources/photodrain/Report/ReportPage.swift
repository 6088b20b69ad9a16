import AssetStore
import FaceAnalysis
import Foundation
import PhotoDecoding

/// The HTML of `photodrain report`: one self-contained page (inline CSS, a few lines of inline
/// script, thumbnails as `data:` URIs), written in pieces so a big library streams to disk.
///
/// Order: `head`, `summary`, then one `card` per photo, then `foot`. Every text that comes from a
/// file name, the store or a verdict goes through `escape`.
enum ReportPage {
    /// Escapes text for HTML element content and double- or single-quoted attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// The document's start: doctype, title and style. `thumbnailSize` sets the grid's cell size.
    static func head(title: String, thumbnailSize: Int) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="generator" content="photodrain \(PhotoDrainCLI.version)">
        <title>\(escape(title))</title>
        <style>
        :root { --thumb: \(thumbnailSize)px; --ok: #168a34; --bad: #d9480f; --muted: #5f6470; --line: #dcdfe5; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1d1f23; background: #f3f4f6; }
        header { padding: 16px 24px 12px; background: #fff; border-bottom: 1px solid var(--line); }
        h1 { font-size: 20px; margin: 0 0 2px; }
        .where { color: var(--muted); margin: 0 0 12px; overflow-wrap: anywhere; }
        .stats { display: flex; flex-wrap: wrap; gap: 8px; margin: 0; padding: 0; list-style: none; }
        .stats li { background: #f3f4f6; border: 1px solid var(--line); border-radius: 6px; padding: 5px 10px; }
        .stats b { display: block; font-size: 18px; }
        .stats small { color: var(--muted); font-size: 12px; white-space: nowrap; }
        .controls { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: center; margin-top: 12px; }
        .controls select { font: inherit; padding: 2px 4px; }
        .legend span { display: inline-block; width: 14px; height: 10px; margin: 0 4px 0 10px; vertical-align: middle; }
        .legend .confirmed { border: 2px solid var(--ok); }
        .legend .rejected { border: 2px dashed var(--bad); }
        main { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, calc(var(--thumb) + 20px)), 1fr)); gap: 12px; padding: 16px 24px; }
        .card { display: flex; flex-direction: column; background: #fff; border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
        .card[hidden] { display: none; }
        .frame { display: flex; align-items: center; justify-content: center; min-height: calc(var(--thumb) + 20px); padding: 10px; background: #26282d; }
        .photo { position: relative; max-width: 100%; }
        .photo img { display: block; max-width: 100%; height: auto; }
        .box { position: absolute; border: 2px solid var(--ok); box-shadow: 0 0 0 1px rgba(0, 0, 0, .55); }
        .box.rejected { border: 2px dashed var(--bad); box-shadow: none; }
        .box span { position: absolute; left: -2px; top: 100%; padding: 0 3px; font-size: 11px; line-height: 15px; color: #fff; background: var(--ok); white-space: nowrap; }
        .box.rejected span { background: var(--bad); }
        .placeholder { max-width: 90%; padding: 16px; border: 2px dashed #6b6f78; border-radius: 6px; color: #e9eaee; text-align: center; overflow-wrap: anywhere; }
        .placeholder strong { display: block; font-size: 16px; margin-bottom: 4px; }
        .meta { padding: 8px 10px 10px; }
        .name { margin: 0 0 4px; font-size: 13px; overflow-wrap: anywhere; }
        .meta p { margin: 2px 0; }
        .tag { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 12px; background: #e6e8ec; }
        .tag.faces, .tag.uploaded { background: #d4f3dc; color: #0c5a21; }
        .tag.uploaded-unverified { background: #fff1c2; color: #6b4e00; }
        .tag.error, .tag.failed { background: #ffe1d4; color: #8a2a00; }
        .tag.analyzed { background: #dde9ff; color: #1f3f80; }
        .tag.unanalysable { background: #ececec; color: #444; }
        .muted { color: var(--muted); }
        .problem { color: #8a2a00; overflow-wrap: anywhere; }
        code { font-size: 12px; overflow-wrap: anywhere; }
        .empty { grid-column: 1 / -1; color: var(--muted); }
        </style>
        </head>
        <body data-check="pending">

        """
    }

    /// The header: where the library is, the totals, and the two filters with their counts.
    static func summary(_ summary: ReportSummary, library: String, store: String, generatedAt: String) -> String {
        var stats: [(value: String, caption: String)] = [
            ("\(summary.photos)", "photos"),
            ("\(summary.byState[.discovered] ?? 0)", "waiting for analysis"),
            ("\(summary.byState[.analyzed] ?? 0)", "analysed, not uploaded"),
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
        if let rate = summary.photosPerSecond, let mean = summary.meanMilliseconds {
            stats.append((String(format: "%.1f/s", rate), String(format: "per slot (%.0f ms a photo)", mean)))
        }
        var html = "<header>\n<h1>PhotoDrain report</h1>\n"
        html += "<p class=\"where\"><code>\(escape(library))</code> · store <code>\(escape(store))</code> · \(escape(generatedAt))"
        if !summary.models.isEmpty {
            html += " · " + summary.models.map { "<code>\(escape($0))</code>" }.joined(separator: ", ")
        }
        html += "</p>\n<ul class=\"stats\" id=\"summary\">\n"
        for stat in stats {
            html += "<li><b>\(escape(stat.value))</b><small>\(escape(stat.caption))</small></li>\n"
        }
        html += "</ul>\n<div class=\"controls\">\n"
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
        html += "<span>showing <b id=\"shown\">\(summary.photos)</b> of \(summary.photos)</span>\n"
        html += "<span class=\"legend\"><span class=\"confirmed\"></span>confirmed face<span class=\"rejected\"></span>rejected box</span>\n"
        html += "</div>\n</header>\n<main id=\"cards\">\n"
        if summary.photos == 0 {
            html += "<p class=\"empty\">No photos in this library yet.</p>\n"
        }
        return html
    }

    /// One photo's card: the thumbnail with its boxes (or a placeholder with the error), the
    /// label and score, the upload state and server id, and every error the photo has.
    static func card(_ entry: ReportEntry, thumbnail: Result<Thumbnail, DecodeError>) -> String {
        let record = entry.record
        let label = entry.label
        let state = record.state
        var html = "<article class=\"card\" data-label=\"\(label.rawValue)\" data-state=\"\(state.rawValue)\" data-path=\"\(escape(record.path))\">\n"
        html += "<div class=\"frame\">"
        var problems: [String] = []
        if let problem = entry.analysisProblem { problems.append(problem) }
        switch thumbnail {
        case .success(let thumb):
            html += "<div class=\"photo\"><img class=\"thumb\" width=\"\(thumb.width)\" height=\"\(thumb.height)\" alt=\"\(escape(record.path))\" src=\"\(thumb.dataURI)\">"
            if let verdict = entry.verdict, let size = verdict.analysisSize, size.width > 0, size.height > 0 {
                for face in verdict.faces { html += box(face, in: size) }
            }
            html += "</div>"
        case .failure(let error):
            let reason = "\(error.code.rawValue): \(error.message)"
            html += "<div class=\"placeholder\"><strong>no preview</strong>\(escape(reason))</div>"
            // An undecodable photo's verdict already says why; say it again only when it differs.
            if entry.analysisProblem == nil { problems.append("no preview: \(reason)") }
        }
        html += "</div>\n<div class=\"meta\">\n<h2 class=\"name\">\(escape(record.path))</h2>\n"
        html += "<p><span class=\"tag \(label.rawValue)\">\(label.title)</span>"
        if let verdict = entry.verdict, verdict.label != .error, verdict.label != .unanalysable {
            html += " score \(String(format: "%.3f", verdict.score))"
            html += " · \(entry.confirmedFaces) face\(entry.confirmedFaces == 1 ? "" : "s")"
            if entry.rejectedBoxes > 0 { html += ", \(entry.rejectedBoxes) rejected" }
        }
        html += "</p>\n<p><span class=\"tag \(state.rawValue)\">\(stateTitle(state))</span>"
        if let serverID = record.serverID { html += " server id <code>\(escape(serverID))</code>" }
        if record.attempts > 0 { html += " · \(record.attempts) failed attempt\(record.attempts == 1 ? "" : "s")" }
        html += "</p>\n"
        if let verdict = entry.verdict {
            var line = String(format: "analysed in %.1f ms", verdict.milliseconds)
            if let size = verdict.analysisSize { line += " at \(size.width)×\(size.height)" }
            if let width = record.width, let height = record.height { line += " · photo \(width)×\(height)" }
            html += "<p class=\"muted\">\(escape(line))</p>\n"
        }
        if let lastError = record.lastError { problems.append("upload: \(lastError)") }
        for problem in problems { html += "<p class=\"problem\">\(escape(problem))</p>\n" }
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

    /// The document's end: the filter script, and the load handler that records on `<body>` what
    /// the browser saw (cards, boxes, thumbnails that decoded) for `Scripts/check-report`.
    static func foot() -> String {
        """
        </main>
        <script>
        (function () {
          var cards = Array.prototype.slice.call(document.querySelectorAll("article.card"));
          var label = document.getElementById("filter-label");
          var state = document.getElementById("filter-state");
          var shown = document.getElementById("shown");
          function apply() {
            var count = 0;
            cards.forEach(function (card) {
              var visible = (label.value === "" || card.dataset.label === label.value) &&
                            (state.value === "" || card.dataset.state === state.value);
              card.hidden = !visible;
              if (visible) { count += 1; }
            });
            shown.textContent = String(count);
            document.body.dataset.shown = String(count);
          }
          function remember() {
            var parts = [];
            if (label.value !== "") { parts.push("label=" + encodeURIComponent(label.value)); }
            if (state.value !== "") { parts.push("state=" + encodeURIComponent(state.value)); }
            history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
            apply();
          }
          // A link can open the page filtered: report.html#label=faces&state=analyzed
          location.hash.replace(/^#/, "").split("&").forEach(function (pair) {
            var kv = pair.split("=");
            var select = kv[0] === "label" ? label : kv[0] === "state" ? state : null;
            var value = decodeURIComponent(kv[1] || "");
            if (select && Array.prototype.some.call(select.options, function (o) { return o.value === value; })) {
              select.value = value;
            }
          });
          label.addEventListener("change", remember);
          state.addEventListener("change", remember);
          apply();
          window.addEventListener("load", function () {
            var thumbs = document.querySelectorAll("img.thumb");
            var decoded = 0;
            for (var i = 0; i < thumbs.length; i += 1) {
              if (thumbs[i].complete && thumbs[i].naturalWidth > 0) { decoded += 1; }
            }
            var body = document.body;
            body.dataset.cards = String(cards.length);
            body.dataset.boxes = String(document.querySelectorAll("main .box").length);
            body.dataset.confirmedBoxes = String(document.querySelectorAll("main .box.confirmed").length);
            body.dataset.thumbnails = String(thumbs.length);
            body.dataset.thumbnailsLoaded = String(decoded);
            body.dataset.check = "loaded";
          });
        })();
        </script>
        </body>
        </html>

        """
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
