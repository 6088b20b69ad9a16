import AssetStore
import Foundation

/// `photodrain verdicts [DIR]`: every photo's verdict as JSON lines or CSV, for other tools.
enum VerdictsCommand: Command {
    static let spec = CommandSpec(
        name: "verdicts",
        abstract: "Print every photo's verdict as JSON lines or CSV.",
        arguments: "[DIR]",
        discussion: """
        One record per photo, by path: state, label, face count, score, timestamps, server id, the
        decode error for undecodable photos, and (JSON lines only) the whole verdict.

        """ + LibraryOptions.filterDiscussion,
        options: [LibraryOptions.store] + LibraryOptions.filters + [.option("format", "jsonl|csv", "Output format.", default: "jsonl")],
        positionals: (0, 1),
        examples: [("photodrain verdicts ~/Pictures --format csv > verdicts.csv", "a spreadsheet of results")]
            + LibraryOptions.filterExamples("verdicts"),
        exitCodes: [(0, "printed"), (1, "the store could not be read, or there is none yet"), (64, "usage error")]
    )

    static let csvColumns = ["path", "state", "label", "faces", "score", "analyzed_at", "uploaded_at", "server_id", "error", "sha256"]

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let format = arguments.string("format") ?? "jsonl"
        guard format == "jsonl" || format == "csv" else {
            throw UsageError("--format wants jsonl or csv, not '\(format)'", command: spec.name)
        }
        let store = try LibraryOptions.open(arguments, readOnly: true)
        let rows = try store.assets()
        if format == "csv" { Console.shared.out(csvColumns.joined(separator: ",")) }
        for row in rows {
            let fields: [String: Any?] = [
                "path": row.path, "state": row.state.rawValue, "label": row.label, "faces": row.faceCount,
                "score": row.score, "analyzed_at": isoTimestamp(row.analyzedAt), "uploaded_at": isoTimestamp(row.uploadedAt),
                "server_id": row.serverID, "error": row.analysisError ?? row.lastError, "sha256": row.sha256,
            ]
            if format == "csv" {
                Console.shared.out(csvColumns.map { csvField(fields[$0] ?? nil) }.joined(separator: ","))
            } else {
                var object: [String: Any] = [:]
                for (key, value) in fields { if let value { object[key] = value } }
                if let json = row.verdictJSON, let verdict = try? JSONSerialization.jsonObject(with: Data(json.utf8)) {
                    object["verdict"] = verdict
                }
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                Console.shared.out(String(decoding: data, as: UTF8.self))
            }
        }
        return .success
    }

    /// RFC 4180: quote a field holding a comma, quote or line break, doubling its quotes.
    static func csvField(_ value: Any?) -> String {
        guard let value else { return "" }
        let text = "\(value)"
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
