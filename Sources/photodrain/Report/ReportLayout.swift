import Foundation

/// Where `photodrain report` writes and in what shape, decided before anything is written.
///
/// A library of at most `--page-size` photos gets one self-contained file, as `--out FILE.html`
/// always gave. A bigger one, or any library when `--out` names a folder, is written as pages: an
/// index (the totals, the filters, the list of pages and a small manifest of every photo) and
/// pages of `--page-size` photos each, in path order.
///
/// | `--out`                   | photos <= page size      | photos > page size                       |
/// |---------------------------|--------------------------|------------------------------------------|
/// | `report.html`             | `report.html`            | `report.html` + `report-pages/page-0001.html`... |
/// | `report/` (or a folder)   | `report/index.html` + `report/page-0001.html`... | the same        |
/// | `report.html --single-file` | `report.html`          | `report.html`                            |
struct ReportLayout: Equatable, Sendable {
    /// What the user asked for, checked before the store is opened.
    struct Request: Equatable, Sendable {
        /// `--out` as given.
        let out: String
        /// `--out` ends in `/` or names an existing folder.
        let outIsFolder: Bool
        /// `--page-size`.
        let pageSize: Int
        /// `--single-file`.
        let singleFile: Bool

        /// Throws `UsageError` when `--single-file` is asked for with a folder as `--out`.
        init(out: String, outIsFolder: Bool, pageSize: Int, singleFile: Bool) throws(UsageError) {
            if outIsFolder && singleFile {
                throw UsageError("--single-file writes one file, but --out \(out) is a folder: give a file name such as report.html",
                                 command: "report")
            }
            self.out = out
            self.outIsFolder = outIsFolder
            self.pageSize = pageSize
            self.singleFile = singleFile
        }

        /// The layout for a library of `photos` photos.
        func layout(photos: Int) -> ReportLayout {
            if outIsFolder {
                let folder = out.hasSuffix("/") && out.count > 1 ? String(out.dropLast()) : out
                return ReportLayout(shape: .paged, indexPath: folder + "/index.html", pagesFolder: folder, createsPagesFolder: true,
                                    pagesHrefFromIndex: "", indexHrefFromPage: "index.html", pageSize: pageSize, photos: photos)
            }
            // report.html -> report-pages/ beside it; the index keeps the name the user gave.
            let (name, stem) = ReportLayout.nameAndStem(out)
            let folderName = stem + "-pages"
            let parent = (out as NSString).deletingLastPathComponent
            let folder = parent.isEmpty ? folderName : parent + "/" + folderName
            if singleFile || photos <= pageSize {
                return ReportLayout(shape: .singleFile, indexPath: out, pagesFolder: nil, createsPagesFolder: false,
                                    pagesHrefFromIndex: "", indexHrefFromPage: "", pageSize: pageSize, photos: photos,
                                    earlierPagesFolder: folder)
            }
            return ReportLayout(shape: .paged, indexPath: out, pagesFolder: folder, createsPagesFolder: true,
                                pagesHrefFromIndex: ReportLayout.href(folderName) + "/",
                                indexHrefFromPage: "../" + ReportLayout.href(name), pageSize: pageSize, photos: photos)
        }
    }

    /// One file, or an index with pages.
    enum Shape: Equatable, Sendable {
        /// One self-contained page with every photo.
        case singleFile
        /// An index and pages of `pageSize` photos.
        case paged
    }

    let shape: Shape
    /// The single file, or the index of a paged report.
    let indexPath: String
    /// The folder the pages go in (paged only).
    let pagesFolder: String?
    /// Whether `pagesFolder` is made when missing (its parent must exist).
    let createsPagesFolder: Bool
    /// What goes before a page's file name in a link from the index: `""` or `report-pages/`.
    let pagesHrefFromIndex: String
    /// The link from a page back to the index: `index.html` or `../report.html`.
    let indexHrefFromPage: String
    /// Photos per page.
    let pageSize: Int
    /// Photos in the library.
    let photos: Int
    /// For a single file: the folder an earlier paged report of the same `--out` put its pages
    /// in, whose pages now lead nowhere and are removed.
    var earlierPagesFolder: String? = nil

    /// Pages after the index: 0 for a single file or an empty library.
    var pageCount: Int { shape == .paged ? (photos + pageSize - 1) / pageSize : 0 }

    /// The 0-based range of photos on page `number` (1-based).
    func photoRange(ofPage number: Int) -> Range<Int> {
        let start = (number - 1) * pageSize
        return start..<min(start + pageSize, photos)
    }

    /// The page (1-based) that shows photo `index` (0-based, in path order).
    func page(ofPhoto index: Int) -> Int { index / pageSize + 1 }

    /// The file name of `out` and its stem (`report.html`: `report`; a name without `.html` or
    /// `.htm` is its own stem), which the pages' folder and the people page are named after.
    static func nameAndStem(_ out: String) -> (name: String, stem: String) {
        let url = URL(fileURLWithPath: out)
        let name = url.lastPathComponent
        return (name, ["html", "htm"].contains(url.pathExtension.lowercased()) ? url.deletingPathExtension().lastPathComponent : name)
    }

    /// `page-0001.html`: four digits at least, so the pages sort in order.
    static func pageFileName(_ number: Int) -> String { String(format: "page-%04d.html", number) }

    /// The page number in a file name `pageFileName` made, or nil for any other name.
    static func pageNumber(inFileName name: String) -> Int? {
        guard name.hasPrefix("page-"), name.hasSuffix(".html") else { return nil }
        let digits = name.dropFirst(5).dropLast(5)
        guard digits.count >= 4, digits.allSatisfy(\.isASCII), let number = Int(digits), number > 0 else { return nil }
        return number
    }

    /// Where page `number` is written.
    func pagePath(_ number: Int) -> String { (pagesFolder ?? ".") + "/" + Self.pageFileName(number) }

    /// The link to page `number` from the index.
    func pageHrefFromIndex(_ number: Int) -> String { pagesHrefFromIndex + Self.pageFileName(number) }

    /// A file name as one path segment of a relative URL: everything but unreserved characters
    /// percent-encoded, so `#`, `?`, `%` and spaces in a name the user chose do not break a link.
    static func href(_ name: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
    }
}
