import AssetStore
import Drain
import FaceAnalysis
import Foundation
import SystemSupport

/// `photodrain verdicts [DIR]`: every photo's verdict as JSON lines or CSV, for other tools.
enum VerdictsCommand: Command {
    static let spec = CommandSpec(
        name: "verdicts",
        abstract: "Print every photo's verdict as JSON lines or CSV.",
        arguments: "[DIR]",
        discussion: """
        One record per photo, by path: state, label, face count, score, timestamps, server id, the
        decode error for undecodable photos, the people of its faces (`photodrain people`; in
        CSV as ID:NAME pairs separated by ';'), and (JSON lines only) the whole verdict.

        """ + LibraryOptions.filterDiscussion,
        options: [LibraryOptions.store] + LibraryOptions.filters + [.option("format", "jsonl|csv", "Output format.", default: "jsonl")],
        positionals: (0, 1),
        examples: [("photodrain verdicts ~/Pictures --format csv > verdicts.csv", "a spreadsheet of results")]
            + LibraryOptions.filterExamples("verdicts"),
        exitCodes: [(0, "printed"), (1, "the store could not be read, or there is none yet"), (64, "usage error")]
    )

    static let csvColumns = ["path", "state", "label", "faces", "score", "analyzed_at", "uploaded_at", "server_id", "error", "sha256", "people"]

    /// One photo's record; a JSON line has these keys (sorted, absent when nil).
    struct Line: Encodable {
        let path: String
        let state: String
        let label: String?
        let faces: Int?
        let score: Double?
        let analyzedAt: String?
        let uploadedAt: String?
        let serverID: String?
        let error: String?
        let sha256: String?
        /// The whole banked verdict (JSON lines only).
        let verdict: BankedForm?
        /// The person of each of its faces that has one; absent when none has.
        let people: [Verdict.PersonTag]?

        enum CodingKeys: String, CodingKey {
            case path, state, label, faces, score, error, sha256, verdict, people
            case analyzedAt = "analyzed_at", uploadedAt = "uploaded_at", serverID = "server_id"
        }

        init(_ row: AssetRecord, faces faceRows: [FaceRecord]) {
            path = row.path
            let tags = faceRows.compactMap { face in face.person.map { Verdict.PersonTag(face: face.face.index, person: $0, name: face.name) } }
            people = tags.isEmpty ? nil : tags
            state = row.state.rawValue
            label = row.label
            faces = row.faceCount
            score = row.score
            analyzedAt = isoTimestamp(row.analyzedAt)
            uploadedAt = isoTimestamp(row.uploadedAt)
            serverID = row.serverID
            error = row.analysisError ?? row.lastError
            sha256 = row.sha256
            if let photo = row.companionOf, row.label == AssetRecord.companionLabel {
                verdict = .companion(CompanionLink(companionOf: photo))
            } else {
                verdict = (try? row.verdict()).map(BankedForm.verdict)
            }
        }

        /// The CSV fields, in `csvColumns` order. The server's id is the server's text: its
        /// control characters are escaped, as everywhere the tool prints it.
        var csvFields: [String] {
            [path, state, label, faces.map { "\($0)" }, score.map { "\($0)" }, analyzedAt, uploadedAt,
             serverID.map(TerminalText.escaped), error, sha256,
             people.map { $0.map { tag in "\(tag.person)" + (tag.name.map { ":" + $0 } ?? "") }.joined(separator: ";") }]
                .map(VerdictsCommand.csvField)
        }
    }

    /// What a row banked: a verdict, or a companion file's link to its photo.
    enum BankedForm: Encodable {
        case verdict(Verdict)
        case companion(CompanionLink)

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .verdict(let verdict): try verdict.encode(to: encoder)
            case .companion(let link): try link.encode(to: encoder)
            }
        }
    }

    /// A companion file's banked form: its label and its photo's path.
    struct CompanionLink: Encodable {
        var label = AssetRecord.companionLabel
        let companionOf: String
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let format = arguments.string("format") ?? "jsonl"
        guard format == "jsonl" || format == "csv" else {
            throw UsageError("--format wants jsonl or csv, not '\(format)'", command: spec.name)
        }
        let store = try LibraryOptions.open(arguments, readOnly: true)
        if format == "csv" { Console.shared.out(csvColumns.joined(separator: ",")) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A line per row as it is read: the whole library is never held (its faces' people are).
        let people = try store.facesWithPeople()
        var encodingError: (any Error)?
        try store.forEachAsset { (row) throws(StoreError) in
            let line = Line(row, faces: people[row.path] ?? [])
            if format == "csv" {
                Console.shared.out(line.csvFields.joined(separator: ","))
            } else if encodingError == nil {
                do {
                    Console.shared.out(String(decoding: try encoder.encode(line), as: UTF8.self))
                } catch {
                    encodingError = error
                }
            }
        }
        if let encodingError { throw encodingError }
        return .success
    }

    /// RFC 4180: quote a field holding a comma, quote or line break, doubling its quotes.
    static func csvField(_ value: String?) -> String {
        guard let text = value else { return "" }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
