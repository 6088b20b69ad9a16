import AssetStore
import Drain
import FaceAnalysis
import Foundation

/// `photodrain status [DIR]`: counts by state and the photos that failed, with their reasons.
enum StatusCommand: Command {
    static let spec = CommandSpec(
        name: "status",
        abstract: "Show how far a library has got: files by state, and every skipped, unanalysable, undecodable or failed file with its reason.",
        arguments: "[DIR]",
        discussion: "Reads the store only; it does not scan the folder (analyze, drain and wake do).\n" + LibraryOptions.filterDiscussion,
        options: [LibraryOptions.store] + LibraryOptions.filters + [.flag("json", "One JSON object: counts, then the skipped, unanalysable, undecodable and failed files, each with code and reason.")],
        positionals: (0, 1),
        examples: [("photodrain status ~/Pictures", "counts and failures"), ("photodrain status --json . | jq .counts", "for scripts")]
            + LibraryOptions.filterExamples("status"),
        exitCodes: [(0, "shown"), (1, "the store could not be read, or there is none yet"), (64, "usage error")]
    )

    /// One file that is not (or not yet) a plain success, and why: `reason` is the message a
    /// person reads, `code` the stable code for machines.
    struct Problem: Encodable {
        let path: String
        var code: String?
        let reason: String
        var attempts: Int?
        var state: String?
    }

    struct Report: Encodable {
        let library: String
        let store: String
        let counts: StatusCounts
        /// Photos uploaded per destination, the active one (whose marks `counts.uploaded` shows) first.
        let destinations: [AssetStore.DestinationCount]
        /// Jobs with the agent, bytes confirmed and to send, rate and ETA.
        let transfer: TransferProgress
        /// When the folder was last scanned and last walked in full, and the scan's change token.
        let scan: ScanLine
        /// What `free-space` freed: in the trash, gone from the device, restored.
        let freed: AssetStore.RemovalSummary
        /// Entries the latest scan left out (names that are not UTF-8, unreadable folders, links out of
        /// the library, FIFOs...): one list, whatever the reason.
        let skipped: [Problem]
        /// Files that are not photos PhotoDrain analyses.
        let unanalysable: [Problem]
        let undecodable: [Problem]
        let failed: [Problem]
    }

    /// The folder's tracking: the last scan, the last full walk, the change token.
    struct ScanLine: Encodable {
        var token: String?
        var scannedAt: String?
        var fullWalkAt: String?

        init(_ state: ScanState) {
            token = state.token?.description
            scannedAt = isoTimestamp(state.scannedAt?.timeIntervalSince1970)
            fullWalkAt = isoTimestamp(state.fullWalkAt?.timeIntervalSince1970)
        }
    }

    /// The upload progress as status lines: jobs with the agent, bytes, rate and time left.
    static func transferRows(_ transfer: TransferProgress) -> [(String, String)] {
        // Jobs are made by wake (for the agent) and by drain (which performs its own); one a
        // drain left when it stopped is resumed by the next drain or agent, so no agent is implied.
        var rows = [("upload jobs open", "\(transfer.jobsInFlight), \(formatBytes(Int(transfer.bytesConfirmed))) of \(formatBytes(Int(transfer.bytesInFlight))) confirmed"
                     + (transfer.jobsInFlight > 0 ? " (the next drain or agent goes on with them)" : ""))]
        if transfer.jobsToAcknowledge > 0 {
            rows.append(("jobs to acknowledge", "\(transfer.jobsToAcknowledge) (the next wake or drain records them)"))
        }
        if transfer.retriesWaiting > 0, let wait = transfer.retryWaitSeconds {
            let due = isoTimestamp(Date().timeIntervalSince1970 + wait).map { ", at \($0)" } ?? ""
            rows.append(("retries waiting", "\(transfer.retriesWaiting) for the server's Retry-After (the first in \(formatDuration(wait))\(due))"))
        }
        rows.append(("bytes uploaded", formatBytes(Int(transfer.bytesUploaded))))
        rows.append(("bytes to send", formatBytes(Int(transfer.bytesRemaining))))
        if let rate = transfer.bytesPerSecond, let eta = transfer.etaSeconds {
            rows.append(("time left", "about \(formatDuration(eta)) at \(formatBytes(Int(rate)))/s (the last 10 minutes' rate)"))
        } else if transfer.bytesRemaining > 0 {
            rows.append(("time left", "unknown: nothing uploaded in the last 10 minutes"))
        }
        return rows
    }

    /// What `free-space` freed, as status lines; none before its first removal.
    static func freedRows(_ freed: AssetStore.RemovalSummary) -> [(String, String)] {
        guard freed.inTrash + freed.gone + freed.restored + freed.unsettled > 0 else { return [] }
        func files(_ count: Int) -> String { "\(count) file\(count == 1 ? "" : "s")" }
        var rows = [("space freed", "\(formatBytes(Int(freed.freedBytes))) taken off the library by free-space, \(formatBytes(Int(freed.trashBytes))) of it in the trash until emptied (photodrain restore brings any back)")]
        let since = freed.oldestInTrash.flatMap { isoTimestamp($0) }.map { ", the oldest since \($0)" } ?? ""
        rows.append(("in the trash", "\(files(freed.inTrash)), \(formatBytes(Int(freed.trashBytes)))\(since) (free-space --empty-trash empties it)"))
        if freed.gone > 0 {
            rows.append(("at the destination only", "\(files(freed.gone)), \(formatBytes(Int(freed.goneBytes))) (deleted or emptied from the trash)"))
        }
        if freed.restored > 0 { rows.append(("restored", files(freed.restored))) }
        if freed.unsettled > 0 {
            rows.append(("removals interrupted", "\(files(freed.unsettled)) (the next free-space or restore settles them)"))
        }
        return rows
    }

    /// Seconds for people: `45 s`, `12 min`, `3.5 h`.
    static func formatDuration(_ seconds: Double) -> String {
        if seconds < 90 { return "\(Int(seconds)) s" }
        if seconds < 5400 { return "\(Int((seconds / 60).rounded())) min" }
        return String(format: "%.1f h", seconds / 3600)
    }

    /// The code and message of a row's error verdict; the code alone when the verdict is unreadable.
    static func problem(_ row: AssetRecord) -> Problem {
        let failure = (try? row.verdict())?.error
        return Problem(path: row.path, code: failure?.code ?? row.analysisError,
                       reason: failure?.message ?? row.analysisError ?? "unknown", state: row.state.rawValue)
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let store = try LibraryOptions.open(arguments, readOnly: true)
        let counts = try store.counts()
        let transfer = try store.transferProgress()
        let failed = try store.assets(in: .failed).map { Problem(path: $0.path, reason: $0.lastError ?? "unknown", attempts: $0.attempts) }
        let skipped = try store.skippedEntries().map { Problem(path: $0.path, reason: $0.message) }
        let unanalysable = try store.unanalysableAssets().map(problem)
        let undecodable = try store.undecodableAssets().map(problem)
        let scan = ScanLine(try store.scanState())
        let destinations = try store.destinationCounts()
        let freed = try store.removalSummary()
        if arguments.flag("json") {
            Console.shared.json(Report(library: store.root, store: store.path, counts: counts, destinations: destinations,
                                       transfer: transfer, scan: scan, freed: freed, skipped: skipped,
                                       unanalysable: unanalysable, undecodable: undecodable, failed: failed))
            return .success
        }
        let console = Console.shared
        console.out(console.bold("\(store.root)") + "  (store \(store.path))")
        let rows: [(String, Int)] = [
            ("files", counts.total), ("waiting for analysis", counts.discovered), ("analysed, not uploaded", counts.analyzed),
            ("uploaded", counts.uploaded), ("failed", counts.failed), ("unanalysable, held back", counts.unanalysable),
            ("skipped by the last scan", counts.skipped), ("hidden, left out", counts.hidden),
        ]
        for (name, value) in rows {
            var note = ""
            if name == "uploaded" {
                var parts: [String] = []
                if counts.uploadedUnverified > 0 { parts.append("\(counts.uploadedUnverified) unverified: the destination gave no proof") }
                if counts.uploadedUnchecked > 0 { parts.append("\(counts.uploadedUnchecked) from before receipts were proven: run photodrain verify") }
                if let active = destinations.first(where: \.active) { parts.insert("to \(active.destination)", at: 0) }
                if !parts.isEmpty { note = " (" + parts.joined(separator: "; ") + ")" }
            }
            if name == "hidden, left out" && value > 0 {
                note = " (names starting with a dot; --include-hidden on analyze, drain or wake takes them)"
            }
            console.out("  \(name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(value)\(note)")
        }
        for other in destinations where !other.active {
            let unverified = other.unverified > 0 ? ", \(other.unverified) unverified" : ""
            console.out("  \("uploaded elsewhere".padding(toLength: 24, withPad: " ", startingAt: 0)) \(other.uploaded) to \(other.destination)\(unverified)")
        }
        console.out("  \("faces found".padding(toLength: 24, withPad: " ", startingAt: 0)) \(counts.faces) in \(counts.withFaces) photos")
        for (name, value) in transferRows(transfer) {
            console.out("  \(name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(value)")
        }
        for (name, value) in freedRows(freed) {
            console.out("  \(name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(value)")
        }
        if let deferral = try store.lastDeferral() {
            console.out("  \("last wait".padding(toLength: 24, withPad: " ", startingAt: 0)) \(isoTimestamp(deferral.at) ?? "?"): \(deferral.reason)")
        }
        if let scanned = scan.scannedAt {
            let walk = scan.fullWalkAt.map { "; last full walk \($0) (--rescan walks in full)" } ?? ""
            console.out("  \("last scan".padding(toLength: 24, withPad: " ", startingAt: 0)) \(scanned)\(walk)")
        }
        if !skipped.isEmpty {
            console.out("")
            console.out("Skipped by the last scan (\(skipped.count)); not in the store until fixed:")
            for problem in skipped { console.out("  \(problem.path): \(problem.reason)") }
        }
        if !unanalysable.isEmpty {
            console.out("")
            console.out("Unanalysable (\(unanalysable.count)): not photos PhotoDrain analyses; uploaded as they are only with --upload-unanalysable:")
            for problem in unanalysable {
                let uploaded = problem.state == AssetRecord.State.uploaded.rawValue ? " (uploaded)" : ""
                console.out("  \(problem.path): \(problem.reason)\(uploaded)")
            }
        }
        if !undecodable.isEmpty {
            console.out("")
            console.out("Undecodable (\(undecodable.count)); they are uploaded with their error as the verdict:")
            for problem in undecodable { console.out("  \(problem.path): \(problem.code ?? "error"): \(problem.reason)") }
        }
        if !failed.isEmpty {
            console.out("")
            console.out(console.red("Failed (\(failed.count)):"))
            for problem in failed { console.out("  \(problem.path): \(problem.reason) (after \(problem.attempts ?? 0) attempts)") }
        }
        return .success
    }
}
