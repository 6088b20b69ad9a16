import Foundation
import Synchronization

/// The receiver's housekeeping of `uploads/`, on a thread of its own (`ReceiverServer` starts it):
/// removes uploads untouched for longer than the partial TTL, and rewrites the record of each
/// finished upload to say it is complete.
///
/// Each pass reads at most `sweepBatch` records, continuing after the last one the previous pass
/// read, so no pass takes long however many uploads there are; one directory fsync covers its
/// removals. Passes come every `sweepInterval` (at most the partial TTL), and a second apart
/// while a round through the records is unfinished. Expiry used to run inside whichever request
/// found it due (5,274 expired uploads made one `GET /healthz` take 16 s) and never without
/// traffic.
///
/// A finished upload's record is left as it was by the request that completed it (the hot path
/// creates files and deletes none, see `UploadRecord.reservedObjectID`) and reads as complete
/// from then on; the next pass writes it as complete, so the file says what it means too.
final class ExpirySweeper: Sendable {
    /// What one pass did.
    struct Pass: Sendable {
        /// Expired uploads removed (record and partial bytes).
        var removed = 0
        /// Uploads that could not be removed or rewritten, and the first error.
        var failed = 0
        var firstFailure: ReceiverError?
        /// Whether the pass read up to the last record (the next round starts from the first).
        var reachedEnd = true
    }

    /// The pause before the next pass while a round through the records is unfinished.
    static let pauseBetweenBatches = 1.0

    private let spaces: AccountSpaces
    private let registry: TransferRegistry
    private let configuration: ReceiverConfiguration
    /// Per account, the last id the previous pass read; none to start from the first.
    private let cursor = Mutex<[String: String]>([:])

    /// With `serve --store s3://…`: the bucket's sweep, run with every pass.
    private let bucketSweep: S3Sweep?

    init(spaces: AccountSpaces, registry: TransferRegistry, configuration: ReceiverConfiguration) {
        self.spaces = spaces
        self.registry = registry
        self.configuration = configuration
        bucketSweep = configuration.s3Store.map { S3Sweep(bucket: S3Bucket(configuration: $0), partialTTL: configuration.partialTTL) }
    }

    /// Seconds between rounds: `sweepInterval`, and never longer than the partial TTL.
    var interval: Double { min(configuration.sweepInterval, configuration.partialTTL) }

    /// Runs passes until `wake` becomes readable (`ReceiverServer.stop()` writes to it); the
    /// first comes one interval after the start. Call it on a thread of its own.
    func run(until wake: Int32) {
        var delay = interval
        while true {
            do {
                if try Syscalls.waitReadable(wake, timeoutMilliseconds: Int32(clamping: Int((delay * 1000).rounded(.up)))) { return }
            } catch {
                configuration.log("expiry sweep stopped: \(error)")
                return
            }
            let pass = sweep()
            if pass.removed > 0 { configuration.log("expired \(pass.removed) partial upload(s)") }
            if let bucketSweep {
                let bucketPass = bucketSweep.pass(now: configuration.now())
                if bucketPass.removed > 0 || bucketPass.aborted > 0 {
                    configuration.log("expired \(bucketPass.removed) partial upload(s) in the bucket, aborted \(bucketPass.aborted) abandoned multipart upload(s)")
                }
                if let failure = bucketPass.firstFailure {
                    configuration.log("expiry sweep of the bucket: \(bucketPass.failed) failure(s): \(failure)")
                }
            }
            if let failure = pass.firstFailure {
                configuration.log("expiry sweep: \(pass.failed) upload(s) could not be removed or settled: \(failure)")
            }
            delay = pass.reachedEnd ? interval : min(interval, Self.pauseBetweenBatches)
        }
    }

    /// One pass through every account's store (`AccountSpaces`), each as `sweep(_:)` says.
    func sweep() -> Pass {
        var total = Pass()
        for space in spaces.all {
            let pass = sweep(space)
            total.removed += pass.removed
            total.failed += pass.failed
            if total.firstFailure == nil { total.firstFailure = pass.firstFailure }
            total.reachedEnd = total.reachedEnd && pass.reachedEnd
        }
        return total
    }

    /// One pass over an account's store: reads at most `sweepBatch` records after the previous
    /// pass's last; removes the expired uploads no request is using, and writes finished uploads'
    /// records as complete. An upload a request holds or waits for is skipped until the next round.
    private func sweep(_ space: AccountSpaces.Space) -> Pass {
        let store = space.store
        var pass = Pass()
        let now = configuration.now()
        let ids: [String]
        do {
            ids = try store.uploadIDs()
        } catch {
            pass.failed = 1
            pass.firstFailure = error
            return pass
        }
        let after = cursor.withLock { $0[space.account] }
        let start = after.map { last in ids.firstIndex { $0 > last } ?? ids.endIndex } ?? 0
        let batch = ids[start...].prefix(configuration.sweepBatch)
        pass.reachedEnd = batch.endIndex == ids.endIndex
        for id in batch {
            guard registry.acquireIfIdle(id) else { continue }
            defer { registry.release(id) }
            guard let record = store.storedRecord(id) else { continue }
            do throws(ReceiverError) {
                if store.hasExpired(record.current, now: now) {
                    try store.removeUpload(id, syncDirectory: false)
                    pass.removed += 1
                } else if record.current.complete && !record.onDisk.complete {
                    try store.save(record.current)
                }
            } catch {
                pass.failed += 1
                if pass.firstFailure == nil { pass.firstFailure = error }
            }
        }
        cursor.withLock { $0[space.account] = pass.reachedEnd ? nil : batch.last }
        if pass.removed > 0 {
            do throws(ReceiverError) {
                try store.syncUploadsDirectory()
            } catch {
                pass.failed += 1
                if pass.firstFailure == nil { pass.firstFailure = error }
            }
        }
        return pass
    }
}
