import Foundation
import PhotoDecoding
import Synchronization

/// Makes the cards of a page of the report, thumbnails and all, and appends them to its file.
enum ReportCards {
    /// How many cards got a thumbnail and how many a placeholder.
    struct Tally: Sendable {
        /// Cards with an embedded thumbnail.
        var thumbnails = 0
        /// Cards with a placeholder instead (the photo could not be decoded).
        var placeholders = 0

        static func + (a: Tally, b: Tally) -> Tally {
            Tally(thumbnails: a.thumbnails + b.thumbnails, placeholders: a.placeholders + b.placeholders)
        }
    }

    /// Makes the cards of `entries` in batches, `slots` thumbnails at a time, and appends each batch
    /// in order, so memory holds one batch of thumbnails however big the library is. The first
    /// entry is photo `firstNumber` of the library (1-based), which names the cards' ids.
    /// Throws `ReportFileError` or the file handle's error when the page cannot be written.
    static func write(_ entries: ArraySlice<ReportEntry>, firstNumber: Int, root: String, size: Int, slots: Int,
                      to writer: ReportFile, progress: ProgressBar) throws -> Tally {
        var tally = Tally()
        let batchSize = slots * 4
        var start = entries.startIndex
        while start < entries.endIndex {
            let batch = Array(entries[start..<min(start + batchSize, entries.endIndex)])
            let batchNumber = firstNumber + (start - entries.startIndex)
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
                    let html = ReportPage.card(entry, number: batchNumber + index, thumbnail: thumbnail)
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
