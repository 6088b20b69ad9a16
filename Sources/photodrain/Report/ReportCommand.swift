import AssetStore
import Foundation
import PhotoDecoding
import Synchronization

/// `photodrain report DIR --out FILE.html`: a contact sheet of the library with face boxes and verdicts.
enum ReportCommand: Command {
    /// Usage, options and help of `photodrain report`.
    static let spec = CommandSpec(
        name: "report",
        abstract: "Write an HTML contact sheet of a library: thumbnails with face boxes, verdicts, upload state.",
        arguments: "DIR",
        discussion: """
        Scans DIR (as analyze does) and writes one self-contained HTML page: every photo as a
        thumbnail made by PhotoDrain's own decoder and embedded in the page, with the cascade's
        boxes drawn over it (solid green: confirmed by the classifier; dashed red: rejected), its
        label and score, upload state and server id, and every error it has. Photos that cannot be
        decoded get a card with the reason. The top of the page sums it up (photos by state,
        faces, time spent analysing, throughput) and filters the cards by label and state; a
        link such as report.html#label=faces&state=analyzed opens it filtered. The page needs no
        network and no other file; it is written to a temporary file and renamed into place.
        Undecodable photos are shown, not failed on: they do not change the exit status.
        """ + LibraryOptions.scanDiscussion,
        options: [
            .option("out", "FILE.html", "Where to write the page (required)."),
            LibraryOptions.store, LibraryOptions.include, LibraryOptions.exclude, LibraryOptions.rescan,
            .option("thumbnail-size", "PIXELS", "Longest side of each thumbnail, 32...2048.", default: "320"),
            .option("slots", "N", "Thumbnails made at once.", default: "the number of cores"),
        ],
        positionals: (1, 1),
        examples: [
            ("photodrain report ~/Pictures --out report.html", "after analyze or drain: look at what was found"),
            ("photodrain report ~/Pictures --out /tmp/small.html --thumbnail-size 160", "a lighter page for a big library"),
            ("photodrain report ~/Pictures --out 2019.html --include '2019/*'", "only the photos under 2019/ (fnmatch(3) globs, as analyze takes)"),
        ],
        exitCodes: [(0, "the page was written"), (1, "failure (store unreadable, the page could not be written)"),
                    (64, "usage error")]
    )

    /// Scans the library, then writes the page. Throws `UsageError` for bad options, the store's
    /// error when it cannot be read, `ReportFileError` when the page cannot be written.
    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        guard let out = arguments.string("out"), !out.isEmpty else {
            throw UsageError("--out FILE.html is required", command: spec.name)
        }
        let size = try arguments.int("thumbnail-size", default: 320, range: 32...2048)
        let slots = try arguments.int("slots", default: max(1, ProcessInfo.processInfo.activeProcessorCount), range: 1...64)
        let store = try LibraryOptions.open(arguments)
        // The .sqlite file alone holds everything once the command ends, whatever way it ends.
        defer { store.checkpoint() }
        let console = Console.shared

        let scan = try store.scan(full: arguments.flag("rescan"))
        for problem in scan.problems { console.err("photodrain report: skipped \(problem.path): \(problem.message)") }
        let entries = try store.assets().map(ReportEntry.init(record:))
        let summary = ReportSummary(entries: entries)
        let generatedAt = isoTimestamp(Date().timeIntervalSince1970) ?? ""

        let writer = try ReportFile(destination: out)
        let bar = ProgressBar(title: "thumbnails", total: entries.count)
        let tally = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ThumbnailTally, any Error>) in
            // Decoding is blocking CPU work: it gets its own thread, not the cooperative pool.
            Thread.detachNewThread {
                continuation.resume(with: Result {
                    try writer.append(ReportPage.head(title: "PhotoDrain report: \(store.root)", thumbnailSize: size))
                    try writer.append(ReportPage.summary(summary, library: store.root, store: store.path, generatedAt: generatedAt))
                    let tally = try writeCards(entries, root: store.root, size: size, slots: slots, to: writer, progress: bar)
                    try writer.append(ReportPage.foot())
                    try writer.commit()
                    return tally
                })
            }
        }
        bar.finish()
        let megabytes = Double(writer.bytesWritten) / 1_048_576
        console.out("wrote \(out): \(entries.count) photos (\(tally.thumbnails) thumbnails, \(tally.placeholders) without a preview), " +
                    "\(summary.confirmedFaces) faces, \(String(format: "%.1f", megabytes)) MB")
        return .success
    }

    /// How many cards got a thumbnail and how many a placeholder.
    struct ThumbnailTally: Sendable {
        /// Cards with an embedded thumbnail.
        var thumbnails = 0
        /// Cards with a placeholder instead (the photo could not be decoded).
        var placeholders = 0
    }

    /// Makes the cards in batches, `slots` thumbnails at a time, and appends each batch in order,
    /// so memory holds one batch of thumbnails however big the library is.
    static func writeCards(_ entries: [ReportEntry], root: String, size: Int, slots: Int,
                           to writer: ReportFile, progress: ProgressBar) throws -> ThumbnailTally {
        var tally = ThumbnailTally()
        let batchSize = slots * 4
        var start = 0
        while start < entries.count {
            let batch = Array(entries[start..<min(start + batchSize, entries.count)])
            let cards = Mutex([(html: String, hasThumbnail: Bool)](repeating: ("", false), count: batch.count))
            let next = Atomic(0)
            DispatchQueue.concurrentPerform(iterations: min(slots, batch.count)) { _ in
                while true {
                    let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < batch.count else { return }
                    let entry = batch[index]
                    let thumbnail = Result { () throws(DecodeError) -> Thumbnail in
                        try Thumbnail.make(path: root + "/" + entry.record.path, size: size)
                    }
                    let html = ReportPage.card(entry, thumbnail: thumbnail)
                    let hasThumbnail = (try? thumbnail.get()) != nil
                    cards.withLock { $0[index] = (html, hasThumbnail) }
                    progress.advance()
                }
            }
            let made = cards.withLock { $0 }
            try writer.append(made.map(\.html).joined())
            for card in made {
                if card.hasThumbnail { tally.thumbnails += 1 } else { tally.placeholders += 1 }
            }
            start += batch.count
        }
        return tally
    }
}
