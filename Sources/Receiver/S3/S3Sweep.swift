import Foundation

/// The expiry sweep of a bucket store (`serve --store s3://…`), run by `ExpirySweeper` with each
/// of its passes. Any number of instances may sweep one bucket at once: every removal is either
/// conditional or of something no live record names.
///
/// A pass reads every upload record (`uploads/` of the account `default`, `accounts/*/uploads/`
/// of the others: a listing of every key under `accounts/`, objects included, which a store of
/// many accounts will want narrowed) and removes those untouched for the partial TTL (finished
/// ones a partial TTL after they finished, as on a directory): the record first, deleted
/// `If-Match` the version found expired (a request that committed meanwhile keeps it), then its
/// tail and its multipart upload. Then every multipart upload in the store that began more than
/// the partial TTL ago and that no remaining record names is aborted: those of requests that
/// lost their upload to another, or of instances killed between creating one and committing it.
/// (A bucket lifecycle rule that aborts incomplete multipart uploads does the second part without
/// `serve`; see README.)
struct S3Sweep: Sendable {
    let bucket: S3Bucket
    let partialTTL: Double

    struct Pass {
        var removed = 0
        var aborted = 0
        var failed = 0
        var firstFailure: ReceiverError?
    }

    func pass(now: Date) -> Pass {
        var pass = Pass()
        var named = Set<String>()
        let keys: [String]
        do {
            keys = try bucket.list("uploads/") + bucket.list("accounts/")
        } catch {
            return Pass(failed: 1, firstFailure: error)
        }
        for key in keys {
            guard let (account, id) = Self.recordKey(key) else { continue }
            let space = S3Space(bucket: bucket, account: account)
            do throws(ReceiverError) {
                guard let (record, etag) = try space.record(id) else { continue }
                // As on a directory, a finished upload's record goes a partial TTL after it finished.
                guard now.timeIntervalSince(record.updatedAt) > partialTTL else {
                    if let multipartID = record.multipartID, !record.complete { named.insert(multipartID) }
                    continue
                }
                guard try bucket.delete(space.key(S3UploadRecord.key(id)), ifMatch: etag) else {
                    if let multipartID = record.multipartID { named.insert(multipartID) }
                    continue
                }
                if let tail = record.tail { try bucket.delete(space.key(tail.key)) }
                if let multipartID = record.multipartID, !record.complete {
                    try bucket.abortMultipartUpload(space.key(S3Space.objectKey(record.reservedObjectID)), uploadID: multipartID)
                }
                pass.removed += 1
            } catch {
                pass.failed += 1
                if pass.firstFailure == nil { pass.firstFailure = error }
            }
        }
        do throws(ReceiverError) {
            for upload in try bucket.multipartUploads("") where !named.contains(upload.uploadID) {
                guard let initiated = upload.initiated, now.timeIntervalSince(initiated) > partialTTL else { continue }
                try bucket.abortMultipartUpload(upload.key, uploadID: upload.uploadID)
                pass.aborted += 1
            }
        } catch {
            pass.failed += 1
            if pass.firstFailure == nil { pass.firstFailure = error }
        }
        return pass
    }

    /// The account and upload id of a record's key (`uploads/<id>.json`,
    /// `accounts/<name>/uploads/<id>.json`); nil for any other key.
    static func recordKey(_ key: String) -> (account: String, id: String)? {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let account: String
        let leaf: String
        switch parts.count {
        case 2 where parts[0] == "uploads":
            account = AccountBook.defaultAccount
            leaf = parts[1]
        case 4 where parts[0] == "accounts" && parts[2] == "uploads":
            account = parts[1]
            leaf = parts[3]
        default:
            return nil
        }
        guard leaf.hasSuffix(".json"), UploadStore.isValidID(leaf.dropLast(5)) else { return nil }
        return (account, String(leaf.dropLast(5)))
    }
}
