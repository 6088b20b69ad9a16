#if canImport(Glibc)
import Glibc
#endif
import AssetStore
import FaceAnalysis
import Foundation
import PhotoDecoding
import Synchronization
import SystemSupport

/// The report's people page (issue 36 item 6): every person the store's clustering found, a row
/// of their face crops, each crop a link to its photo's card in the report.
///
/// It is a file of its own beside the report (`report-people.html` beside a single file,
/// `people.html` among the pages), self-contained like every page, written only when the library
/// has people; the report's header links to it, and each card names its photo's people with
/// links to their sections. The crops are cut from the photo decoded at the size its verdict was
/// made at (the faces' boxes are in those pixels), each photo decoded once however many faces it
/// has, `slots` at a time.
enum ReportPeople {
    /// Crops shown per person: the representative face first, then the others in path order.
    /// The rest are counted ("and 40 more faces"), as `photodrain people` lists them all.
    static let cropsPerPerson = 24
    /// People with a section of their own; the others (the fewest faces) are counted in a line. A
    /// crop is about 6 kB in the page, so these two keep it under about 15 MB however many people
    /// a library has, as `--page-size` keeps the pages of cards.
    static let maxPeople = 500
    /// Crops over the whole page before each further person shows their representative face alone.
    static let cropBudget = 2_000
    /// The long side of a crop, in pixels.
    static let cropSize = 112

    /// One person as the page and the cards show them.
    struct Person: Sendable {
        let record: PersonRecord
        /// How many of their faces the page shows (`cropCounts`).
        var cropLimit = ReportPeople.cropsPerPerson
        /// The person's name, or `person 7`.
        var title: String { record.name ?? "person \(record.id)" }
        /// The faces shown, the representative first.
        var shown: [FaceRecord] {
            let faces = record.faces
            guard cropLimit > 0 else { return [] }
            guard let id = record.representative, let first = faces.first(where: { $0.id == id }) else {
                return Array(faces.prefix(cropLimit))
            }
            return [first] + faces.lazy.filter { $0.id != id }.prefix(cropLimit - 1)
        }
        /// Photos the person is in.
        var photoCount: Int { Set(record.faces.map(\.path)).count }
    }

    /// The people in page order: named people first (by name), then by face count, most first,
    /// then by id, so the people a user cares about most lead; each with the crops `cropCounts`
    /// gives them. Only the first `maxPeople` get a section.
    static func ordered(_ people: [PersonRecord]) -> [Person] {
        var ordered = sortedForPage(people)
        for (i, count) in cropCounts(ordered.map(\.record.faces.count)).enumerated() { ordered[i].cropLimit = count }
        return ordered
    }

    /// How many crops each person shows, given their face counts in page order: up to
    /// `cropsPerPerson` while the page's `cropBudget` lasts, then one (the representative); none
    /// past `maxPeople`.
    static func cropCounts(_ faces: [Int]) -> [Int] {
        var left = cropBudget
        return faces.enumerated().map { index, count in
            guard index < maxPeople else { return 0 }
            let shown = max(1, min(count, cropsPerPerson, left))
            left = max(0, left - shown)
            return shown
        }
    }

    private static func sortedForPage(_ people: [PersonRecord]) -> [Person] {
        people.filter { !$0.faces.isEmpty }.sorted { a, b in
            switch (a.name, b.name) {
            case let (x?, y?) where x != y: return x.localizedStandardCompare(y) == .orderedAscending
            case (_?, nil): return true
            case (nil, _?): return false
            default: return a.faces.count != b.faces.count ? a.faces.count > b.faces.count : a.id < b.id
            }
        }.map { Person(record: $0) }
    }

    /// Where the page goes and how the report's files link to it.
    struct Place: Equatable, Sendable {
        /// The page's file.
        let path: String
        /// The link to it from the single file or the index.
        let hrefFromIndex: String
        /// The link to it from a page of cards (the pages sit beside it).
        let hrefFromPage: String
        /// The link back to the single file or the index.
        let indexHref: String
    }

    /// The people page's place for `layout`: `STEM-people.html` beside a single file,
    /// `people.html` in the pages' folder of a paged report.
    static func place(_ layout: ReportLayout, out: String) -> Place {
        switch layout.shape {
        case .singleFile:
            let (name, stem) = ReportLayout.nameAndStem(out)
            let file = stem + "-people.html"
            let parent = (out as NSString).deletingLastPathComponent
            return Place(path: parent.isEmpty ? file : parent + "/" + file, hrefFromIndex: ReportLayout.href(file),
                         hrefFromPage: ReportLayout.href(file), indexHref: ReportLayout.href(name))
        case .paged:
            return Place(path: (layout.pagesFolder ?? ".") + "/people.html", hrefFromIndex: layout.pagesHrefFromIndex + "people.html",
                         hrefFromPage: "people.html", indexHref: layout.indexHrefFromPage)
        }
    }

    /// The link from the people page to photo `index` (0-based, path order)'s card.
    static func cardHref(photo index: Int, layout: ReportLayout, place: Place) -> String {
        switch layout.shape {
        case .singleFile: place.indexHref + "#photo=\(index + 1)"
        case .paged: ReportLayout.pageFileName(layout.page(ofPhoto: index)) + "#photo=\(index + 1)"
        }
    }

    /// A person as a card names them.
    struct Tag: Sendable, Equatable {
        let id: Int64
        let title: String
        /// They have a section on the people page to link to.
        let onPage: Bool
    }

    /// The people of each photo, by path, for the cards: in face order, each person once.
    static func byPhoto(_ people: [Person]) -> [String: [Tag]] {
        var out: [String: [(tag: Tag, face: Int)]] = [:]
        for (rank, person) in people.enumerated() {
            let tag = Tag(id: person.record.id, title: person.title, onPage: rank < maxPeople)
            for face in person.record.faces where !(out[face.path]?.contains { $0.tag.id == tag.id } ?? false) {
                out[face.path, default: []].append((tag, face.face.index))
            }
        }
        return out.mapValues { $0.sorted { $0.face < $1.face }.map(\.tag) }
    }

    /// What the page shows of the crops it made.
    struct Tally: Sendable, Equatable {
        var people = 0
        var crops = 0
        /// Faces whose photo could not be decoded now (gone, changed into something unreadable).
        var missing = 0
        var bytes = 0
    }

    /// Writes the page for `people` (in page order) to `place.path`. `photoIndex` gives each
    /// path's place in the report (0-based) and `entries` its verdict's size. Throws
    /// `ReportFileError` when the page cannot be written.
    static func write(_ people: [Person], place: Place, layout: ReportLayout, entries: [ReportEntry], library: String,
                      generatedAt: String, slots: Int, progress: ProgressBar) throws -> Tally {
        let photoIndex = Dictionary(entries.enumerated().map { ($1.record.path, $0) }, uniquingKeysWith: { a, _ in a })
        // Each photo once, whatever number of its faces are shown.
        let onPage = people.prefix(maxPeople)
        let facesByPhoto = Dictionary(grouping: onPage.flatMap(\.shown), by: \.path)
        let paths = facesByPhoto.keys.sorted()
        let crops = Mutex([Int64: Thumbnail]())
        let next = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: max(1, min(slots, paths.count))) { _ in
            while true {
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < paths.count else { return }
                let path = paths[index]
                let size = photoIndex[path].flatMap { entries[$0].verdict?.analysisSize }
                let made = cropFaces(facesByPhoto[path] ?? [], photo: library + "/" + path, analysisSize: size)
                crops.withLock { $0.merge(made) { a, _ in a } }
                progress.advance(by: facesByPhoto[path]?.count ?? 0)
            }
        }
        let made = crops.withLock { $0 }
        var tally = Tally(people: onPage.count)
        let file = try ReportFile(destination: place.path)
        try file.append(ReportPage.head(title: "PhotoDrain report, people: \(library)", thumbnailSize: cropSize))
        let faceCount = people.reduce(0) { $0 + $1.record.faces.count }
        var html = "<header>\n<h1>People</h1>\n"
        html += "<p class=\"where\"><code>\(Markup.escape(library))</code> · \(Markup.escape(generatedAt))</p>\n"
        html += "<nav class=\"pages\">" + ReportPage.navLink(place.indexHref, "← the report", rel: "index") + "</nav>\n"
        html += "<p>\(people.count) \(people.count == 1 ? "person" : "people") in \(faceCount) face\(faceCount == 1 ? "" : "s"), " +
            "found on this device. Name, merge or split them with <code>photodrain people</code>; each face links to its photo.</p>\n"
        html += "</header>\n<main class=\"people\">\n"
        try file.append(html)
        for person in onPage {
            var section = "<section class=\"person\" id=\"person-\(person.record.id)\" data-person=\"\(person.record.id)\">\n"
            let faces = person.record.faces.count
            section += "<h2>\(Markup.escape(person.title))</h2>\n<p class=\"muted\">\(faces) face\(faces == 1 ? "" : "s") in \(person.photoCount) " +
                "photo\(person.photoCount == 1 ? "" : "s") · id \(person.record.id)</p>\n<div class=\"faces\">"
            for face in person.shown {
                let box = face.face
                let title = "\(face.path) · face \(face.id), \(box.width)×\(box.height) at \(box.x),\(box.y)"
                let href = photoIndex[face.path].map { cardHref(photo: $0, layout: layout, place: place) }
                section += href.map { "<a href=\"\(Markup.escape($0))\" title=\"\(Markup.escape(title))\">" } ?? "<span title=\"\(Markup.escape(title))\">"
                if let crop = made[face.id] {
                    section += "<img class=\"crop\" width=\"\(crop.width)\" height=\"\(crop.height)\" alt=\"\(Markup.escape(title))\" src=\"\(crop.dataURI)\">"
                    tally.crops += 1
                } else {
                    section += "<span class=\"crop missing\">no preview</span>"
                    tally.missing += 1
                }
                section += href == nil ? "</span>" : "</a>"
            }
            section += "</div>\n"
            if faces > person.shown.count {
                let more = faces - person.shown.count
                section += "<p class=\"muted\">and \(more) more face\(more == 1 ? "" : "s"): <code>photodrain people</code> lists them all</p>\n"
            }
            try file.append(section + "</section>\n")
        }
        if people.count > onPage.count {
            let rest = people.dropFirst(onPage.count)
            let faces = rest.reduce(0) { $0 + $1.record.faces.count }
            try file.append("<p class=\"muted\" id=\"more-people\">and \(rest.count) more \(rest.count == 1 ? "person" : "people") with fewer faces " +
                            "(\(faces) face\(faces == 1 ? "" : "s")): <code>photodrain people</code> lists them all</p>\n")
        }
        try file.append("</main>\n<script>\n" + ReportScript.people + "</script>\n</body>\n</html>\n")
        try file.commit()
        tally.bytes = file.bytesWritten
        return tally
    }

    /// The crops of `faces` (all of one photo), by face id: the photo decoded once at its verdict's
    /// size (`analysisSize`, the pixels the boxes are in), each face's box grown by half around its
    /// centre to a square, clamped to the image, shrunk to `cropSize`. None when it cannot be decoded.
    static func cropFaces(_ faces: [FaceRecord], photo: String, analysisSize: Verdict.Size?) -> [Int64: Thumbnail] {
        guard let size = analysisSize, size.width > 0, size.height > 0 else { return [:] }
        let target = min(size.width, size.height)
        guard let image = try? PhotoDecoder.decode(photo, options: DecodeOptions(output: .rgb, targetShortSide: target)),
              image.width > 0, image.height > 0 else { return [:] }
        let scaleX = Double(image.width) / Double(size.width), scaleY = Double(image.height) / Double(size.height)
        var out: [Int64: Thumbnail] = [:]
        for face in faces {
            let box = face.face
            let side = Double(max(box.width, box.height)) * 1.5
            let centreX = (Double(box.x) + Double(box.width) / 2) * scaleX, centreY = (Double(box.y) + Double(box.height) / 2) * scaleY
            let left = max(0, Int((centreX - side * scaleX / 2).rounded())), top = max(0, Int((centreY - side * scaleY / 2).rounded()))
            let right = min(image.width, Int((centreX + side * scaleX / 2).rounded()))
            let bottom = min(image.height, Int((centreY + side * scaleY / 2).rounded()))
            guard right > left, bottom > top else { continue }
            let cut = crop(image, x: left, y: top, width: right - left, height: bottom - top)
            let small = Thumbnail.shrink(cut, toFit: cropSize)
            if let jpeg = try? ImageEncoder.jpeg(small, quality: 82) {
                out[face.id] = Thumbnail(width: small.width, height: small.height, jpeg: jpeg)
            }
        }
        return out
    }

    /// The rectangle of `image` at (`x`, `y`), `width` by `height`, which lies inside it.
    static func crop(_ image: Image, x: Int, y: Int, width: Int, height: Int) -> Image {
        let channels = image.channels
        return image.pixels.withUnsafeBufferPointer { source in
            Image(width: width, height: height, channels: channels) { out in
                let rowBytes = width * channels
                for row in 0..<height {
                    let from = ((y + row) * image.width + x) * channels
                    for i in 0..<rowBytes { out[row * rowBytes + i] = source[from + i] }
                }
            }
        }
    }

    /// Removes a people page an earlier report wrote at `path` when this report has no people
    /// (only a file PhotoDrain wrote). Returns whether it removed one.
    static func removeStale(_ path: String) -> Bool {
        guard PagedReport.isReportPage(path) else { return false }
        return unlink(path) == 0
    }
}
