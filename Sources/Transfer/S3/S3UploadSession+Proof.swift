import Foundation
import SystemSupport

/// The proof of an S3 upload: the figures the store computed (`S3StoreProof`) checked against the
/// file's, each part's MD5 and SHA-256 read once, and the whole file's SHA-256 fed from the parts
/// read in order, so a file rewritten since it was hashed is never completed under its old name.
extension S3UploadSession {
    /// The receipt when the store's own figures in its answer show it holds this file's bytes
    /// (`S3StoreProof`). Figures that show other bytes: the object is removed (only while it is
    /// still the one those figures describe, `If-Match`) and the upload is tried again (transient:
    /// the bytes changed on the way). No figure to compare: `uploaded-unverified` when the user
    /// accepts that, else `unverified-receipt`.
    func provenReceipt(_ proof: S3StoreProof, status: Int, headers: [String: String], etag: String,
                               multipart: Bool) async throws(TransferError) -> UploadReceipt {
        switch proof.check(headers: headers, etag: etag) {
        case .matches(let figure):
            return receipt(status: status, headers: headers, etag: etag, multipart: multipart, figure: figure)
        case .differs(let reason):
            _ = try? await uploader.send("DELETE", key: key, headers: [("if-match", etag)])
            throw TransferError(.corruptedInTransit, "the store holds other bytes than the file's: \(reason) (the bytes changed "
                                + "on the way); the object was removed", httpStatus: status, classification: .transient)
        case .absent:
            guard configuration.acceptUnverified else {
                throw TransferError(.unverifiedReceipt, """
                    the store accepted the object but gave no figure of its own to prove it holds these bytes (its ETag is not an MD5 \
                    and it returned no SHA-256 checksum). Pass --accept-unverified to upload there anyway (marked uploaded-unverified)
                    """, httpStatus: status)
            }
            var unproven = receipt(status: status, headers: headers, etag: etag, multipart: multipart, figure: nil)
            unproven.proof = .unverified
            return unproven
        }
    }

    /// The figures the whole file gets from a store as a multipart upload of `partCount` parts.
    func multipartProof() throws(TransferError) -> S3StoreProof {
        var md5s: [[UInt8]] = []
        var shas: [[UInt8]] = []
        for number in 1...partCount {
            let digests = try digests(ofPart: number)
            md5s.append(digests.md5)
            shas.append(digests.sha256)
        }
        return try S3StoreProof(partMD5s: md5s, partSHA256s: shas)
    }

    /// The MD5 and SHA-256 of part `number`'s bytes in the file, read once.
    func digests(ofPart number: Int) throws(TransferError) -> (md5: [UInt8], sha256: [UInt8]) {
        if let known = partDigests[number] { return known }
        let offset = Int64(number - 1) * partSize
        if number == 1 { wholeHasher = try? SHA256() }
        let inOrder = number == wholeHashedParts + 1 ? wholeHasher : nil
        let digests = try FileDigest.md5AndSHA256(path: path, offset: offset, length: expectedSize(of: number), alsoFeeding: inOrder)
        if inOrder != nil { wholeHashedParts = number }
        partDigests[number] = digests
        return digests
    }

    /// Throws `file-unreadable` when the parts' bytes are not the file whose SHA-256 names the
    /// object (rewritten since it was hashed), after aborting the multipart upload so none of it
    /// is ever completed.
    func checkWholeFileBeforeCompleting() async throws(TransferError) {
        let whole: [UInt8]
        if wholeHashedParts == partCount, let hasher = wholeHasher,
           let digest = try? TransferError.translating({ () throws(SystemError) in try hasher.finish() }) {
            whole = digest
        } else {
            whole = try FileDigest.sha256(path: path)
        }
        wholeHasher = nil
        wholeHashedParts = 0
        guard whole != sha256 else { return }
        if let uploadID { _ = try? await uploader.send("DELETE", key: key, query: [("uploadId", uploadID)]) }
        uploadID = nil
        parts = [:]
        partDigests = [:]
        throw Self.changedSinceHashing
    }
}
