/// The columns of the `assets` table an `AssetRecord` is read from, named in this one place: the
/// SELECT list is made from the cases in order, and a selected row's values are read by case
/// (`Row`), so adding a column (a migration) means a case here and a line in `AssetRecord`,
/// never a count of positions.
enum AssetColumn: Int, CaseIterable {
    case id, path, size, mtime, generation, sha256, format, width, height, verdict, label, faceCount
    case score, analysisError, discoveredAt, analyzedAt, lastAttemptAt, uploadedAt, attempts
    case lastError, serverID, failed, rawPath, uploadProof, companionOf, captureDate

    /// The column's name in the schema (`Schema.swift`).
    var name: String {
        switch self {
        case .id: "id"
        case .path: "path"
        case .size: "size"
        case .mtime: "mtime_ns"
        case .generation: "generation"
        case .sha256: "sha256"
        case .format: "format"
        case .width: "width"
        case .height: "height"
        case .verdict: "verdict"
        case .label: "label"
        case .faceCount: "face_count"
        case .score: "score"
        case .analysisError: "analysis_error"
        case .discoveredAt: "discovered_at"
        case .analyzedAt: "analyzed_at"
        case .lastAttemptAt: "last_attempt_at"
        case .uploadedAt: "uploaded_at"
        case .attempts: "attempts"
        case .lastError: "last_error"
        case .serverID: "server_id"
        case .failed: "failed"
        case .rawPath: "raw_path"
        case .uploadProof: "upload_proof"
        case .companionOf: "companion_of"
        case .captureDate: "capture_date"
        }
    }

    /// The SELECT list, in case order.
    static let selectList = allCases.map(\.name).joined(separator: ", ")

    /// The SELECT list with each column qualified by a table alias (`a.id, a.path, …`), for joins.
    static func selectList(qualifiedBy alias: String) -> String {
        allCases.map { "\(alias).\($0.name)" }.joined(separator: ", ")
    }

    /// A row selected with `selectList` first, read by column.
    struct Row {
        let values: [SQLValue]
        init(_ values: [SQLValue]) {
            precondition(values.count >= AssetColumn.allCases.count, "an asset row selected without AssetColumn.selectList")
            self.values = values
        }
        subscript(_ column: AssetColumn) -> SQLValue { values[column.rawValue] }
    }
}
