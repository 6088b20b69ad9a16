import AssetStore
import FaceAnalysis
import Foundation
import PhotoAnalysis
import SystemSupport
import Transfer
import UploadProtocol

/// How performing one upload job ended.
public enum PerformOutcome: Sendable, Equatable {
    /// The job finished (succeeded or failed) and its result is recorded on it.
    case finished(JobResult)
    /// The photo was removed or changed: the job was cancelled (and any partial upload deleted).
    case cancelled(reason: String)
    /// Stopped before finishing (runner terminating): the job stays pending, resumable, uncharged.
    case deferred(reason: String)
    /// The store could not be read (damaged, gone): nothing was sent. A runner stops on it; a
    /// deferral would retry the same broken read for ever.
    case storeFailed(StoreError)
}

/// Performs upload jobs: the transfer agent's work, shared by `agent` and the foreground `drain`.
/// Each job's checkpoint is saved in the store before any byte is sent and after every
/// acknowledged step, so a new process resumes where the server stands. The job row keeps it as
/// `resume_url` = `UploadCheckpoint.storedForm` (a resumable upload's URL, or an S3 multipart
/// upload's JSON: object, upload id, part ETags) and `confirmed_offset` = acknowledged bytes.
public final class JobPerformer: Sendable {
    private let store: AssetStore
    private let uploader: any UploadDestination

    /// Creates a performer uploading to `uploader` (any destination: resumable HTTP or S3).
    public init(store: AssetStore, uploader: any UploadDestination) {
        self.store = store
        self.uploader = uploader
    }

    /// What an upload needs before its first byte, read from the store and the file.
    private enum Prepared: Sendable {
        case ready(AssetRecord, path: String, UploadMetadata)
        /// The photo was removed or changed since it was analysed.
        case gone(AssetRecord?)
        case unreadable(AssetRecord, TransferError)
        case storeFailed(StoreError)
    }

    /// Uploads the job's photo, tagged with its verdict, and records the outcome on the job. The
    /// store's part (reading the row, hashing a file analysis did not hash, recording the outcome)
    /// runs on threads of its own, never on the cooperative pool the transfers wait on.
    public func perform(_ job: UploadJob) async -> PerformOutcome {
        let prepared = await onOwnThreadUntilDone("photodrain-upload-prepare") { self.prepare(job) }
        let asset: AssetRecord, path: String, metadata: UploadMetadata
        switch prepared {
        case .ready(let readyAsset, let readyPath, let readyMetadata): (asset, path, metadata) = (readyAsset, readyPath, readyMetadata)
        case .gone(let goneAsset): return await cancel(job, reason: "the photo was removed or changed", asset: goneAsset)
        case .unreadable(let failedAsset, let error):
            return await failed(job, error: error, asset: failedAsset, reason: "the photo was removed or changed")
        case .storeFailed(let error): return .storeFailed(error)
        }
        let resume = job.resumeURL.flatMap { uploader.checkpoint(restoring: $0, confirmedOffset: job.confirmedOffset) }
        let store = self.store
        do {
            let receipt = try await uploader.upload(file: path, metadata: metadata, resumeFrom: resume, progress: { _ in },
                                                    checkpoint: { checkpoint in
                try store.checkpointJob(job, resumeURL: checkpoint.storedForm, confirmedOffset: checkpoint.offset)
            })
            let result = JobResult.succeeded(status: receipt.status, serverID: receipt.serverID, headers: receipt.headers,
                                             proof: receipt.proof, alreadyStored: receipt.alreadyStored)
            return await onOwnThreadUntilDone("photodrain-upload-record") {
                // A file changed during the upload was rejected by its digest or sent as read;
                // either way the row's next scan redoes it (its folder is read even if only the
                // file's bytes changed). A success for bytes that still match is recorded.
                if !store.fileMatches(asset) { try? store.invalidateFolder(of: asset) }
                _ = try? store.finishJob(job, result: result)
                return .finished(result)
            }
        } catch {
            if error.classification == .deferred || Task.isCancelled {
                await onOwnThreadUntilDone("photodrain-upload-record") { _ = try? store.releaseJob(job) }
                return .deferred(reason: error.message)
            }
            return await failed(job, error: error, asset: asset, reason: "the photo changed during its upload")
        }
    }

    /// Records a failure on the job, unless the photo no longer matches its row: then the job
    /// is cancelled (and its partial upload deleted), as the failure was the file's changing.
    /// The check and the record are one trip to a thread of their own.
    private func failed(_ job: UploadJob, error: TransferError, asset: AssetRecord, reason: String) async -> PerformOutcome {
        let recorded = await onOwnThreadUntilDone("photodrain-upload-record") { () -> PerformOutcome? in
            self.store.fileMatches(asset) ? self.finish(job, error: error) : nil
        }
        if let recorded { return recorded }
        return await cancel(job, reason: reason, asset: asset)
    }

    /// Reads the job's row, checks the file is the version analysed, and makes the upload's
    /// metadata: name, digest, verdict, provenance.
    private func prepare(_ job: UploadJob) -> Prepared {
        let asset: AssetRecord?
        do {
            asset = try store.asset(for: job)
        } catch {
            return .storeFailed(error)
        }
        guard let asset, store.fileMatches(asset) else { return .gone(asset) }
        let path = store.absolutePath(of: asset)
        let name = (asset.path as NSString).lastPathComponent
        // The file name's own bytes, when they are not UTF-8, go in Content-Disposition's filename*.
        let nameBytes = asset.rawPath.map { raw in Array(raw.split(separator: 0x2F, omittingEmptySubsequences: true).last ?? raw[...]) }
        let verdict = travellingVerdict(of: asset)
        do {
            let sha: String
            if let banked = asset.sha256 { sha = banked } else { sha = try Self.sha256(ofFile: path) }
            var metadata = UploadMetadata(filename: name, sha256Hex: sha, verdictJSON: verdict.json, filenameBytes: nameBytes)
            metadata.verdictSummaryJSON = verdict.summary
            // The row's size and mtime are the version its verdict describes (`fileMatches` just
            // checked the file still has them); the capture date is the one analysis banked.
            metadata.provenance = Provenance(path: asset.libraryPath, mtimeNanoseconds: asset.mtimeNanoseconds,
                                             size: Int64(asset.size), dateTimeOriginal: captureDate(of: asset, at: path))
            return .ready(asset, path: path, metadata)
        } catch {
            return .unreadable(asset, error)
        }
    }

    /// The verdict a file is uploaded with, as compact JSON, and its summary for a destination
    /// with no room for the whole (S3). Its own, sent as banked; for a companion file (a Live
    /// Photo's video, an `.AAE`, an `.xmp`), its photo's, with `companionOf` naming the photo.
    /// A photo whose faces have people travels with them (`Verdict.people`: ids and names).
    private func travellingVerdict(of asset: AssetRecord) -> (json: String, summary: String?) {
        if let photoPath = asset.companionOf, let photo = try? store.asset(path: photoPath), var verdict = try? photo.verdict() {
            verdict.companionOf = photoPath
            verdict.people = people(inPhoto: photoPath)
            if let json = try? verdict.json() { return (json, try? verdict.summaryJSON()) }
        }
        if let tags = people(inPhoto: asset.path), var verdict = try? asset.verdict() {
            verdict.people = tags
            if let json = try? verdict.json() { return (json, try? verdict.summaryJSON()) }
        }
        return (asset.verdictJSON ?? "{}", (try? asset.verdict()).flatMap { try? $0.summaryJSON() })
    }

    /// The people of the photo at `path`'s faces, as the store has them now; nil when none has one.
    private func people(inPhoto path: String) -> [Verdict.PersonTag]? {
        let tags = ((try? store.faces(ofPhoto: path)) ?? []).compactMap { face in
            face.person.map { Verdict.PersonTag(face: face.face.index, person: $0, name: face.name) }
        }
        return tags.isEmpty ? nil : tags
    }

    /// The SHA-256 of a file analysis did not hash (one that is not a photo, sent on request: a
    /// video of gigabytes is hashed only if it is sent), with the digest type every module shares.
    private static func sha256(ofFile path: String) throws(TransferError) -> String {
        do {
            return try SHA256.hex(path: path)
        } catch {
            throw TransferError(.fileUnreadable, "the file could not be read while hashing: \(error.message)")
        }
    }

    /// The capture date analysis banked on the row. A row analysed before capture dates were
    /// banked has none yet: its date is read from the file's metadata this once and banked, so
    /// no later upload of it opens the file for it again.
    private func captureDate(of asset: AssetRecord, at path: String) -> String? {
        if asset.captureDateBanked { return asset.captureDate }
        let date = AnalysedPhoto.captureDate(ofFile: path)
        _ = try? store.bankCaptureDate(date, for: asset)
        return date
    }

    private func finish(_ job: UploadJob, error: TransferError) -> PerformOutcome {
        let failure = UploadJob.Failure(domain: TransferError.domain, code: error.code.rawValue,
                                        message: error.message, transient: error.isTransient)
        let result = JobResult.failed(status: error.httpStatus, headers: error.responseHeaders, failure: failure,
                                      retryNotBefore: error.retryNotBefore(now: Date()))
        _ = try? store.finishJob(job, result: result)
        return .finished(result)
    }

    /// Cancels a job and deletes its partial upload on the server, if any. The photo's folder is
    /// read by the next scan, which brings the row in line with the file (a rewrite in place
    /// leaves the folder's times alone, so an incremental scan would not look).
    private func cancel(_ job: UploadJob, reason: String, asset: AssetRecord?) async -> PerformOutcome {
        let store = self.store
        if let asset { await onOwnThreadUntilDone("photodrain-upload-record") { try? store.invalidateFolder(of: asset) } }
        if let stored = job.resumeURL, let checkpoint = uploader.checkpoint(restoring: stored, confirmedOffset: job.confirmedOffset) {
            try? await uploader.cancel(checkpoint)
        }
        await onOwnThreadUntilDone("photodrain-upload-record") { _ = try? store.cancelJob(job) }
        return .cancelled(reason: reason)
    }
}
