#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The report's output: appended to a temporary file beside the destination, renamed into place
/// by `commit`, removed if never committed.
final class ReportFile: @unchecked Sendable {
    /// Where the page ends up.
    let destination: String
    /// The hidden file the page is written to until `commit`.
    private let temporary: String
    private let handle: FileHandle
    private var committed = false
    /// Bytes appended so far.
    private(set) var bytesWritten = 0

    /// Creates the temporary file. Throws `ReportFileError` when the destination's folder is not writable.
    init(destination: String) throws {
        self.destination = destination
        let url = URL(fileURLWithPath: destination)
        temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).partial").path
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
              let handle = FileHandle(forWritingAtPath: temporary) else {
            throw ReportFileError(message: "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        self.handle = handle
    }

    deinit {
        if !committed {
            try? handle.close()
            unlink(temporary)
        }
    }

    /// Appends `text` as UTF-8.
    func append(_ text: String) throws {
        let data = Data(text.utf8)
        try handle.write(contentsOf: data)
        bytesWritten += data.count
    }

    /// Flushes the page to disk and renames it to the destination, replacing any older page.
    func commit() throws {
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, destination) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            committed = true
            throw ReportFileError(message: "cannot write \(destination): \(reason)")
        }
        committed = true
    }
}

/// The report page could not be written.
struct ReportFileError: Error, CustomStringConvertible {
    /// What went wrong, with the path.
    let message: String
    var description: String { message }
}
