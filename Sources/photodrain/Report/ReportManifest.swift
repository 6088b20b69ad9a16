import AssetStore
import Foundation

/// Every photo of a paged report in a few bytes each, embedded in the index as JSON so its
/// filters can search the whole library without opening a page.
///
///     {"labels": ["faces", ...], "labelTitles": [...], "states": [...], "stateTitles": [...],
///      "pages": ["page-0001.html", ...], "listLimit": 500,
///      "photos": [["2019/a.jpg", 0, 1, 1], ...]}
///
/// A photo is `[path, label index, state index, page]`, in path order: the photo at index `i`
/// is the card `photo-(i + 1)` on its page.
struct ReportManifest: Encodable {
    /// One photo: where it is, its label and state (indices into the lists), and its page.
    struct Photo: Encodable {
        let path: String
        let label: Int
        let state: Int
        let page: Int

        func encode(to encoder: any Encoder) throws {
            var row = encoder.unkeyedContainer()
            try row.encode(path)
            try row.encode(label)
            try row.encode(state)
            try row.encode(page)
        }
    }

    let labels = ReportEntry.Label.allCases.map(\.rawValue)
    let labelTitles = ReportEntry.Label.allCases.map(\.title)
    let states = AssetRecord.State.allCases.map(\.rawValue)
    let stateTitles = AssetRecord.State.allCases.map(ReportPage.stateTitle)
    /// Each page's link from the index.
    let pages: [String]
    /// How many matches the index lists as links; the pages table counts them all.
    let listLimit: Int
    let photos: [Photo]

    /// The manifest of `entries` laid out by `layout`.
    init(entries: [ReportEntry], layout: ReportLayout, listLimit: Int = 500) {
        let labelIndex = Dictionary(uniqueKeysWithValues: ReportEntry.Label.allCases.enumerated().map { ($1, $0) })
        let stateIndex = Dictionary(uniqueKeysWithValues: AssetRecord.State.allCases.enumerated().map { ($1, $0) })
        pages = layout.pageCount > 0 ? (1...layout.pageCount).map(layout.pageHrefFromIndex) : []
        self.listLimit = listLimit
        photos = entries.enumerated().map { index, entry in
            Photo(path: entry.record.path, label: labelIndex[entry.label] ?? 0, state: stateIndex[entry.record.state] ?? 0,
                  page: layout.page(ofPhoto: index))
        }
    }

    /// The JSON, safe inside `<script type="application/json">`: every `<` is written `\u003c`,
    /// so no file name can close the element.
    func scriptJSON() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(self), as: UTF8.self)
        return json.replacingOccurrences(of: "<", with: "\\u003c")
    }
}
