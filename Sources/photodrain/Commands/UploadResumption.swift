import Foundation
import Transfer

/// How `photodrain upload` resumes across runs: before a file goes, the upload a killed or cut-off
/// earlier run left unfinished (`UploadResumeStore`) is looked up and handed to the uploader as
/// `resumeFrom`; every checkpoint the uploader reports is saved; the record is removed once the
/// file is uploaded. Uploads saved for an older version of the file are cancelled on the server
/// (best effort) and forgotten, since their bytes are not this file's any more.
///
/// Resuming is a help, never a condition: when the state folder cannot be used, one warning goes
/// to standard error and the files are uploaded as before, from the start.
final class UploadResumption {
    /// What one file starts from.
    struct Start {
        /// The file as examined before sending; nil when it could not be (the upload then fails on its own).
        var file: FileIdentity?
        /// The saved upload to resume.
        var resumeFrom: UploadCheckpoint?
    }

    private var store: UploadResumeStore?
    private let destination: UploadResumeStore.Destination
    private let uploader: any UploadDestination
    private var warned = false

    /// Opens the store in the default state folder (`$XDG_STATE_HOME/photodrain/uploads`, else
    /// `~/.local/state/photodrain/uploads`) for uploads to `uploader`; warns once when it cannot.
    init(uploader: any UploadDestination, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.uploader = uploader
        destination = UploadResumeStore.Destination(uploader)
        guard let directory = UploadResumeStore.defaultDirectory(environment: environment) else {
            warnOnce("no state folder: neither XDG_STATE_HOME nor an existing HOME is set")
            return
        }
        do {
            store = try UploadResumeStore(directory: directory)
        } catch {
            warnOnce(error.message)
        }
    }

    /// Looks `path` up: cancels and forgets uploads saved for another version of the file (or
    /// another file once at this path), and returns the checkpoint to resume when one is saved for
    /// this version.
    func start(_ path: String) async -> Start {
        guard let file = try? FileIdentity(examining: path) else { return Start() }
        guard let store else { return Start(file: file) }
        let found = store.lookup(file, at: destination)
        for stale in found.stale {
            if let checkpoint = uploader.checkpoint(restoring: store.storedForm(of: stale, at: destination),
                                                    confirmedOffset: stale.confirmedOffset) {
                // Best effort: a receiver that cannot be reached now drops the partial upload
                // when it expires there.
                try? await uploader.cancel(checkpoint)
            }
            store.remove(stale)
        }
        guard let record = found.resumable else { return Start(file: file) }
        let checkpoint = uploader.checkpoint(restoring: store.storedForm(of: record, at: destination),
                                             confirmedOffset: record.confirmedOffset)
        if checkpoint == nil { store.remove(record) }
        return Start(file: file, resumeFrom: checkpoint)
    }

    /// Saves a checkpoint the uploader reported for `file`; true when it is kept. Never throws: a
    /// failure warns once and turns resuming off for the rest of the run, and the upload goes on.
    @discardableResult
    func save(_ checkpoint: UploadCheckpoint, for file: FileIdentity?) -> Bool {
        guard let store, let file else { return false }
        do {
            try store.save(checkpoint, for: file, at: destination)
            return true
        } catch {
            warnOnce(error.message)
            self.store = nil
            return false
        }
    }

    /// Forgets the saved upload of `file`: it is on the server now.
    func finished(_ file: FileIdentity?) {
        guard let store, let file else { return }
        store.removeRecord(of: file, at: destination)
    }

    /// True while checkpoints are being kept, so a failed upload can be resumed by running again.
    var isKeeping: Bool { store != nil }

    private func warnOnce(_ reason: String) {
        guard !warned else { return }
        warned = true
        Console.shared.err("photodrain upload: warning: an interrupted upload will not resume in a later run (\(reason))")
    }
}
