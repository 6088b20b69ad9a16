import Foundation

/// Companion files: a Live Photo's video (`IMG_0001.MOV` beside `IMG_0001.HEIC`), the edit list
/// (`.AAE`) and a sidecar (`IMG_0001.xmp` or `IMG_0001.HEIC.xmp`) of a photo in the same folder.
/// They are not analysed and not "unanalysable": each is linked to its photo after every scan,
/// labelled `companion`, and uploaded once its photo is, with the photo's verdict and a link to it.
enum Companions {
    /// Extensions of files that can be a photo's companion, lowercased.
    static let companionExtensions: Set<String> = ["mov", "mp4", "aae", "xmp"]
    /// Extensions of photos a companion can belong to, lowercased.
    static let photoExtensions = ["heic", "heif", "jpg", "jpeg", "png", "webp", "avif", "dng"]

    /// Links every companion file to its photo, and unlinks those whose photo is gone (they are
    /// then analysed like any file). Runs inside the scan's transaction.
    static func link(_ db: Database, now: Double) throws(StoreError) {
        let rows = try db.query("SELECT id, path, label, companion_of FROM assets")
        var byLowercasedPath: [String: String] = [:]
        var candidates: [(id: Int64, path: String, label: String?, linked: String?)] = []
        for row in rows {
            guard let id = row[0].int, let path = row[1].string else { continue }
            byLowercasedPath[path.lowercased()] = path
            if companionExtensions.contains(Self.fileExtension(of: path)) {
                candidates.append((Int64(id), path, row[2].string, row[3].string))
            }
        }
        guard !candidates.isEmpty else { return }
        for candidate in candidates {
            let photo = photo(for: candidate.path, in: byLowercasedPath)
            if let photo, photo != candidate.linked || candidate.label != AssetRecord.companionLabel {
                // Linked afresh (or changed on disk, which reset its row): the companion verdict,
                // replacing any earlier one ("unanalysable"). A video or sidecar has no capture
                // date PhotoDrain reads: none is banked, so its upload reads nothing either.
                let verdict = "{\"label\":\"\(AssetRecord.companionLabel)\",\"companionOf\":\(jsonString(photo))}"
                try db.run("""
                    UPDATE assets SET companion_of = ?, label = ?, verdict = ?, face_count = 0, score = NULL,
                      analysis_error = NULL, capture_date = '', analyzed_at = ?, lease_owner = NULL, lease_until = NULL
                    WHERE id = ?
                    """, [.text(photo), .text(AssetRecord.companionLabel), .text(verdict), .real(now), .integer(candidate.id)])
            } else if photo == nil, candidate.linked != nil || candidate.label == AssetRecord.companionLabel {
                try db.run("""
                    UPDATE assets SET companion_of = NULL, label = NULL, verdict = NULL, face_count = NULL, analyzed_at = NULL
                    WHERE id = ? AND uploaded_at IS NULL
                    """, [.integer(candidate.id)])
                try db.run("UPDATE assets SET companion_of = NULL WHERE id = ?", [.integer(candidate.id)])
            }
        }
    }

    /// The photo a companion named `path` belongs to, from the library's paths by lowercased path.
    static func photo(for path: String, in paths: [String: String]) -> String? {
        let lowered = path.lowercased()
        let withoutExtension = String(lowered.dropLast(Self.fileExtension(of: path).count + 1))
        // `IMG_0001.HEIC.xmp`: the photo's whole name, then the sidecar's extension.
        if Self.fileExtension(of: lowered) == "xmp", photoExtensions.contains(Self.fileExtension(of: withoutExtension)),
           let photo = paths[withoutExtension] {
            return photo
        }
        for ext in photoExtensions {
            if let photo = paths[withoutExtension + "." + ext] { return photo }
        }
        return nil
    }

    /// The lowercased extension of the last path component ("" when none).
    static func fileExtension(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }

    /// `text` as a JSON string literal.
    static func jsonString(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
        let array = String(decoding: data, as: UTF8.self)
        return String(array.dropFirst().dropLast())
    }

    /// SQL true for a row that may be uploaded now as far as companions go: not a companion, or
    /// one whose photo is uploaded.
    static func readySQL(_ alias: String) -> String {
        let prefix = alias.isEmpty ? "" : alias + "."
        return "(\(prefix)companion_of IS NULL OR EXISTS (SELECT 1 FROM assets photo WHERE photo.path = \(prefix)companion_of AND photo.uploaded_at IS NOT NULL))"
    }
}
