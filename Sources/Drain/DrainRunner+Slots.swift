import AssetStore
import Foundation
import PhotoAnalysis
import Synchronization
import Transfer
import SystemSupport

/// The drain's slots and what they settle: one analysis, one upload, a finished job recorded
/// on its photo, a rescan, the leftovers of a killed runner.
extension DrainRunner {
    /// Analyses one photo: a newly claimed one within the slot's share of the headroom, or the
    /// `alone` one (already claimed) within all of it. A photo that does not fit is not released:
    /// its claim keeps the next slot from taking it again in this run (`run` releases it at the end).
    func analysisSlot(alone: AssetRecord? = nil, events: @escaping @Sendable (DrainEvent) -> Void) async -> SlotResult {
        let store = self.store, analyzer = self.analyzer, memory = self.memory, slots = options.slots
        let kind: Kind = alone == nil ? .analysis : .analysisAlone
        return await onOwnThread("photodrain-drain-analysis", on: analysisThreads) { () -> SlotResult in
            do {
                guard let asset = try alone ?? store.claimUnanalyzed(limit: 1).first else { return .noWork(kind) }
                switch try AnalysisStep(store: store, analyzer: analyzer, memory: memory, slots: slots).run(asset, alone: alone != nil) {
                case .banked(let verdict, let banked, let milliseconds):
                    events(.analysed(path: asset.path, analysed: verdict, banked: banked, milliseconds: milliseconds))
                    return .worked(kind)
                case .needsAlone:
                    return .needsAlone(asset)
                case .deferred(let reason, let needs):
                    self.deferrals.withLock { $0.record(needs: needs, reason: reason) }
                    events(.deferred(path: asset.path, reason: reason))
                    return .worked(kind)
                }
            } catch {
                return .storeFailed(self.failure(error))
            }
        } ?? .noWork(kind)
    }

    /// Uploads one photo: claims a job (a waiting one, else a new one for the next analysed
    /// photo), performs it, and settles what came of it. The store's part runs on threads of its
    /// own, before and after the transfer.
    func uploadSlot(events: @escaping @Sendable (DrainEvent) -> Void) async -> SlotResult {
        // An analysis-only run has no upload slot to fill (its schedule counts no upload work).
        guard let uploader, let destination = options.destination else { return .noWork(.upload) }
        // Waited for even when the runner is stopping: a job claimed and then abandoned would be
        // held by no one until its claim went stale.
        let claimed = await onOwnThreadUntilDone("photodrain-drain-claim") { self.claimUploadJob(to: destination, events: events) }
        let job: UploadJob, asset: AssetRecord?
        switch claimed {
        case .failure(let error): return .storeFailed("\(error)")
        case .success(nil): return .noWork(.upload)
        case .success(let (claimedJob, claimedAsset)?): (job, asset) = (claimedJob, claimedAsset)
        }
        let performer = JobPerformer(store: store, uploader: uploader)
        // Cancelled by the monitor when the run conditions turn against it: the job goes back to
        // pending (`deferred`), resumable from the server's offset.
        let conditions = options.conditions
        let outcome = await cancelledByStop {
            if let conditions {
                await conditions.transfer(size: Int64(asset?.size ?? 0)) { await performer.perform(job) }
            } else {
                await performer.perform(job)
            }
        }
        // A connection lost because the destination went away (a restart, a crash) is the
        // destination's fault, not the photo's: asked now, over the network, before settling.
        var destinationAway = false
        if case .finished(.failed(_, _, let failure, _)) = outcome, !Self.isDestinationRefusal(failure) {
            destinationAway = await Reachability.destinationIsAway(after: failure, destination: uploader)
        }
        let away = destinationAway
        // Recorded even when the runner is stopping: a finished upload must not wait for the next run.
        return await onOwnThreadUntilDone("photodrain-drain-settle") {
            self.settleUpload(outcome, job: job, asset: asset, destinationAway: away, events: events)
        }
    }

    /// Runs a transfer so that a stop cancels it at once (`StopGrace`: its job stays resumable),
    /// as cancelling the slot's task does.
    private func cancelledByStop(_ transfer: @escaping @Sendable () async -> PerformOutcome) async -> PerformOutcome {
        let task = Task { await transfer() }
        let id = transfers.withLock { transfers in
            transfers.next += 1
            transfers.tasks[transfers.next] = task
            return transfers.next
        }
        // A stop between the two: `stop` has cancelled the transfers it saw, not this one.
        if stopReason.isCompleted { task.cancel() }
        let outcome = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        transfers.withLock { _ = $0.tasks.removeValue(forKey: id) }
        return outcome
    }

    /// The job an upload slot performs, with its photo; nil when nothing waits.
    private func claimUploadJob(to destination: any UploadDestination,
                                events: @escaping @Sendable (DrainEvent) -> Void) -> Result<(UploadJob, AssetRecord?)?, StoreError> {
        do throws(StoreError) {
            // A retry whose Retry-After has passed goes back in line now (its failure counted).
            for due in try store.jobs(for: .retry, maxAttempts: options.retryPolicy.maxAttempts, now: Date()) where due.retryNotBefore != nil {
                let path = (try store.asset(for: due))?.path ?? "job \(due.id)"
                try settle(due, path: path, events: events)
            }
            let job: UploadJob
            if let waiting = try store.claimJobsToPerform(limit: 1).first {
                job = waiting
            } else {
                guard let asset = try store.claimForUpload(limit: 1, includeUnanalysable: options.uploadUnanalysable,
                                                           maxSize: maxUploadSize).first else { return .success(nil) }
                _ = try store.createJob(for: asset, destination: destination.identity.key, inflightLimit: .max)
                guard let created = try store.claimJobsToPerform(limit: 1).first else { return .success(nil) }
                job = created
            }
            return .success((job, try? store.asset(for: job)))
        } catch {
            return .failure(error)
        }
    }

    /// Records what performing `job` came to: on its photo, by the retry policy.
    private func settleUpload(_ outcome: PerformOutcome, job: UploadJob, asset: AssetRecord?, destinationAway: Bool,
                              events: @escaping @Sendable (DrainEvent) -> Void) -> SlotResult {
        let path = asset?.path ?? "job \(job.id)"
        let store = self.store
        func release() throws(StoreError) { if let asset { try store.releaseClaim(assetID: asset.id) } }
        do {
            switch outcome {
            case .finished(.succeeded):
                try settle(job, path: path, events: events)
                return .worked(.upload)
            case .finished(.failed(_, _, let failure, _)):
                let current = try store.job(id: job.id) ?? job
                if Self.isDestinationRefusal(failure) {
                    // A wrong token, URL or CA refuses every photo alike: failing them one by one
                    // would mark the whole library failed for good. Put the job back, uncharged.
                    _ = try store.retryJob(current, update: .unchanged, inflightLimit: .max)
                    return .refused("\(failure.code): \(failure.message)")
                }
                if destinationAway {
                    // Unreachable: a deferral. The job goes back as it was, nothing is charged.
                    _ = try store.retryJob(current, update: .unchanged, inflightLimit: .max)
                    return .offline("\(failure.code): \(failure.message)")
                }
                // The destination asked (Retry-After) to wait: the job stays failed and unsettled
                // until then, so the wait charges nothing; the retry counts as the policy says.
                if let until = waitsForRetryAfter(current, asset: asset) {
                    try release()
                    events(.retryAfter(path: path, until: until))
                    return .retryAfter(until)
                }
                try settle(current, path: path, events: events)
                return failure.transient ? .uploadCharged : .worked(.upload)
            case .cancelled(let reason):
                try release()
                events(.uploadFailed(path: path, message: reason, terminal: false))
                // The photo changed or vanished on disk: rescan, so its row is reset (and it is
                // analysed again) instead of being claimed for upload again and again. A library
                // that went away is the watcher's to wait for.
                do throws(StoreError) {
                    events(.scanned(try store.scan(quietPeriod: options.quietPeriod.milliseconds / 1000, rehash: FileReader.sha256Hex)))
                } catch where options.watch && error.code == .unreadableRoot {}
                return .worked(.upload)
            case .deferred:
                try release()
                return .noWork(.upload)
            case .storeFailed(let error):
                return .storeFailed("\(error)")
            }
        } catch {
            return .storeFailed("\(error)")
        }
    }

    /// Records a finished job on its photo by the retry policy: a success marks the photo
    /// uploaded; a failure counts, and the job is registered again (keeping its upload URL, to
    /// the back of the queue) or, when permanent or at the limit, the photo is failed. Safe to
    /// repeat: the store only settles a job that is still finished. A failed job whose
    /// destination asked (Retry-After) to wait is left as it is until then. True when it settled.
    @discardableResult
    func settle(_ performed: UploadJob, path: String, events: @escaping @Sendable (DrainEvent) -> Void) throws(StoreError) -> Bool {
        // The row as it stands now (the caller's copy predates the outcome the performer recorded).
        guard let job = try store.job(id: performed.id), job.state == .succeeded || job.state == .failed else { return false }
        let policy = options.retryPolicy
        if job.state == .succeeded {
            var serverID: String?
            var settled = false
            try store.acknowledgeJob(job) { job, asset in
                let update = policy.update(for: job, asset: asset)
                if case .uploaded(let id, _) = update { serverID = id }
                settled = true
                return update
            }
            if settled { events(.uploaded(path: path, serverID: serverID, alreadyStored: job.alreadyStored)) }
            return settled
        }
        let asset = try store.asset(for: job)
        if waitsForRetryAfter(job, asset: asset) != nil { return false }
        let update = policy.update(for: job, asset: asset)
        if policy.shouldRetry(job, asset: asset) {
            _ = try store.retryJob(job, update: update, inflightLimit: .max)
        } else {
            try store.acknowledgeJob(job) { _, _ in update }
        }
        if case .failure(_, let message, let terminal) = update {
            events(.uploadFailed(path: path, message: message, terminal: terminal))
        }
        return true
    }

    /// When a failed job may be retried, if its server asked (`Retry-After`) to wait past now and
    /// the retry policy would retry it; nil otherwise. Only this drain's destination's ask counts:
    /// after `--to` changes, the new destination is not held back by the old one's.
    func waitsForRetryAfter(_ job: UploadJob, asset: AssetRecord?) -> Date? {
        guard let until = job.retryNotBefore, until > Date(), job.destination == options.destination?.identity.key,
              options.retryPolicy.shouldRetry(job, asset: asset) else { return nil }
        return until
    }

    /// What a scan during the drain found: photos added or changed (new work for this run), and
    /// files left for later because they are still changing.
    struct Rescan: Sendable {
        var newWork = false
        var settling: [String] = []
    }

    /// Scans the library again (incrementally, with the quiet period; in full with `full`) on a
    /// thread of its own, first marking `folders` to be read whatever their times say, and
    /// reports it: as the scan of a watcher's batch of changes in that many folders when `batch`
    /// is given. A scan that is stopped (the runner was) found nothing.
    func rescan(events: @escaping @Sendable (DrainEvent) -> Void, invalidating folders: Set<[UInt8]> = [], full: Bool = false,
                        batch: Int? = nil) async -> Result<Rescan, StoreError> {
        let store = self.store, quiet = options.quietPeriod.milliseconds / 1000
        let result = await onOwnThread("photodrain-drain-scan") { () -> Result<ScanReport, StoreError> in
            do throws(StoreError) {
                try store.invalidateFolders(folders)
                return .success(try store.scan(full: full, quietPeriod: quiet, rehash: FileReader.sha256Hex))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let report)?:
            events(batch.map { .changed(folders: $0, report: report) } ?? .rescanned(report))
            return .success(Rescan(newWork: !report.changes.added.isEmpty || !report.changes.modified.isEmpty,
                                   settling: report.settling))
        case .failure(let error)?:
            return .failure(error)
        case nil:
            return .success(Rescan())
        }
    }

    /// Settles jobs that finished but were never recorded on their photo: a runner killed between
    /// the server's answer and the acknowledgement leaves them, and nothing else would claim the
    /// photo again. Nil when there were none.
    func settleLeftovers(events: @escaping @Sendable (DrainEvent) -> Void) -> SlotResult? {
        do {
            var settled = false
            for job in try store.jobs(for: .acknowledge) {
                let path = (try store.asset(for: job))?.path ?? "job \(job.id)"
                if try settle(job, path: path, events: events) { settled = true }
            }
            return settled ? .worked(.upload) : nil
        } catch {
            return .storeFailed("\(error)")
        }
    }
}
