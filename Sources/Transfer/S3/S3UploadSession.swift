import SystemSupport
import UploadProtocol
import Foundation

/// One file's way into S3: a single PUT, or a multipart upload that is created, filled part by
/// part (each acknowledged ETag checkpointed), re-synchronised with ListParts after any failure
/// or restart, and completed. Lives inside one `upload` call and is never shared.
final class S3UploadSession {
    let uploader: S3Uploader
    let path: String
    let metadata: UploadMetadata
    /// The file's SHA-256 (the analysis's content hash), raw.
    let sha256: [UInt8]
    let size: Int64
    let key: String
    let objectHeaders: [(name: String, value: String)]
    let progress: (UploadProgress) -> Void
    let checkpoint: (UploadCheckpoint) throws -> Void
    var configuration: S3Configuration { uploader.configuration }

    var uploadID: String?
    var partSize: Int64
    /// Parts S3 acknowledged, by part number.
    var parts: [Int: S3Part] = [:]
    var bytesSent: Int64 = 0
    var retriesLeft: Int
    var restartsLeft = 1
    /// The bytes S3 held for the saved multipart upload this session resumed; nil when it resumed
    /// none, or S3 no longer knew it and the upload started over.
    var resumedFrom: Int64?
    /// Each part's MD5 and SHA-256, as the file's bytes give them (computed once per part).
    var partDigests: [Int: (md5: [UInt8], sha256: [UInt8])] = [:]
    /// The whole file's SHA-256, fed by the part reads while they come in order (parts
    /// 1...`wholeHashedParts`): checked against the digest that names the object before completion.
    var wholeHasher: SHA256?
    var wholeHashedParts = 0
    /// The multipart upload's checksum algorithm: `SHA256` for one this version created, nil for
    /// one an earlier version created (its parts then go with `Content-MD5` alone).
    var checksumAlgorithm: String? = S3UploadSession.checksumAlgorithm

    /// The checksum S3 is asked to compute and check for every part (and the object).
    static let checksumAlgorithm = "SHA256"
    /// The receipt header that names the store's figure the proof rests on.
    static let proofHeader = "x-photodrain-proof"

    /// What ListParts found.
    private enum Listing {
        case parts([S3Part])
        case noSuchUpload
    }

    /// Reads the file's size and builds the object's headers. Throws `TransferError` for an
    /// unreadable file or unusable metadata.
    init(uploader: S3Uploader, path: String, metadata: UploadMetadata, progress: @escaping (UploadProgress) -> Void,
         checkpoint: @escaping (UploadCheckpoint) throws -> Void) throws(TransferError) {
        guard let digest = Hex.bytes(fromHex: metadata.sha256Hex), digest.count == 32 else {
            throw TransferError(.invalidRequest, "the content hash is not 64 hex digits")
        }
        guard !metadata.filename.isEmpty else { throw TransferError(.invalidRequest, "the file name is empty") }
        self.uploader = uploader
        self.path = path
        self.metadata = metadata
        self.sha256 = digest
        self.size = try TransferError.translating { () throws(SystemError) in try ReadOnlyFile(path: path).size() }
        self.key = uploader.configuration.objectKey(for: metadata)
        self.objectHeaders = [("content-type", S3Metadata.contentType(for: metadata.filename))] + (try S3Metadata.headers(for: metadata))
        self.progress = progress
        self.checkpoint = checkpoint
        self.retriesLeft = max(0, uploader.configuration.maxRetriesPerUpload)
        // Enough per part that the file fits in 10,000 parts, rounded up to a whole MiB.
        let needed = (size + Int64(S3Configuration.maximumPartCount) - 1) / Int64(S3Configuration.maximumPartCount)
        let mib: Int64 = 1024 * 1024
        self.partSize = max(uploader.configuration.partSize, (needed + mib - 1) / mib * mib)
    }

    /// Runs the upload to completion.
    func run(resumeFrom saved: UploadCheckpoint?) async throws(TransferError) -> UploadReceipt {
        let resumable = saved.flatMap { checkpoint -> UploadCheckpoint? in
            guard checkpoint.uploadID != nil, checkpoint.checksumAlgorithm == nil || checkpoint.checksumAlgorithm == Self.checksumAlgorithm,
                  checkpoint.location == configuration.objectURI(key: key),
                  let saved = checkpoint.partSize, saved >= S3Configuration.minimumPartSize,
                  (size + saved - 1) / saved <= Int64(S3Configuration.maximumPartCount) else { return nil }
            return checkpoint
        }
        if resumable == nil && size <= configuration.multipartThreshold {
            return try await putWhole()
        }
        return try await multipart(resuming: resumable)
    }

    // MARK: Single PUT

    /// One PUT with the file's `Content-MD5` and SHA-256 checksum, so a store that checks either
    /// refuses bytes changed on the way; the proof is the store's own figures in its answer (no
    /// second request).
    func putWhole() async throws(TransferError) -> UploadReceipt {
        let md5: [UInt8]
        if let known = metadata.md5, known.count == MD5.byteCount {
            md5 = known  // read with the SHA-256 in one pass, ahead of this upload
        } else {
            // The same read checks that the file still is the one whose SHA-256 names the object.
            let digests = try FileDigest.md5AndSHA256(path: path, offset: 0, length: size)
            guard digests.sha256 == sha256 else { throw Self.changedSinceHashing }
            md5 = digests.md5
        }
        let proof = S3StoreProof(md5: md5, sha256: sha256)
        let headers = objectHeaders + [("content-md5", Data(md5).base64EncodedString())]
        let checksum = ("x-amz-checksum-sha256", proof.expectedChecksum)
        while true {
            do throws(TransferError) {
                try checkCancelled()
                // The checksum goes along until this store's ETags have proven to be MD5s.
                let withChecksum = uploader.singlePutETagsAreMD5.withLock { $0 } != true
                let headers = withChecksum ? headers + [checksum] : headers
                let response = try await uploader.send("PUT", key: key, headers: headers,
                                                       body: .file(path: path, offset: 0, length: size),
                                                       payloadHash: metadata.sha256Hex.lowercased())
                bytesSent += response.bytesSent
                guard response.status == 200 else {
                    throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "PutObject")
                }
                guard let etag = response.headers["etag"], !etag.isEmpty else {
                    throw Self.truncated("PutObject: S3 sent no ETag")
                }
                if !withChecksum, proof.check(headers: response.headers, etag: etag) == .absent {
                    // The store's ETags are no MD5s after all (another bucket policy, SSE-KMS):
                    // the same PUT again with the checksum, whose answer is the proof.
                    uploader.singlePutETagsAreMD5.withLock { $0 = false }
                    continue
                }
                let receipt = try await provenReceipt(proof, status: response.status, headers: response.headers, etag: etag, multipart: false)
                if withChecksum, let figure = receipt.headers[Self.proofHeader] {
                    uploader.singlePutETagsAreMD5.withLock { $0 = figure.hasPrefix("etag:") }
                }
                progress(UploadProgress(acknowledgedBytes: size, totalBytes: size))
                return receipt
            } catch {
                try await recover(from: error)
            }
        }
    }

    // MARK: Multipart

    func multipart(resuming saved: UploadCheckpoint?) async throws(TransferError) -> UploadReceipt {
        var needsSync = false
        var resumingSaved = false
        if let saved, let id = saved.uploadID, let savedPartSize = saved.partSize {
            uploadID = id
            partSize = savedPartSize
            partDigests = [:]
            wholeHashedParts = 0
            checksumAlgorithm = saved.checksumAlgorithm
            needsSync = true
            resumingSaved = true
        }
        while true {
            do throws(TransferError) {
                if uploadID == nil {
                    try await create()
                } else if needsSync {
                    needsSync = false
                    let savedID = uploadID
                    let done = try await synchronise()
                    if resumingSaved {
                        // The first listing of the saved upload tells how much of it S3 kept.
                        resumingSaved = false
                        resumedFrom = done != nil ? size : uploadID == savedID ? acknowledgedBytes : nil
                    }
                    if var done {
                        done.resumedFromOffset = resumedFrom
                        return done
                    }
                }
                try await uploadMissingParts()
                return try await complete()
            } catch {
                try await recover(from: error)
                needsSync = true
            }
        }
    }

    /// CreateMultipartUpload, then the checkpoint with the new upload id (before any part is sent).
    func create() async throws(TransferError) {
        try checkCancelled()
        checksumAlgorithm = Self.checksumAlgorithm
        let response = try await uploader.send("POST", key: key, query: [("uploads", "")],
                                               headers: objectHeaders + [("x-amz-checksum-algorithm", Self.checksumAlgorithm)], body: .empty)
        guard response.status == 200 else {
            throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "CreateMultipartUpload")
        }
        guard S3Failure.errorCode(in: response.body) == nil,
              let id = S3XML.value("UploadId", in: response.body), !id.isEmpty else {
            throw Self.truncated("CreateMultipartUpload: S3's answer had no UploadId")
        }
        uploadID = id
        parts = [:]
        do throws(TransferError) {
            try saveCheckpoint()
        } catch {
            // The id could not be saved, so nobody could ever resume or abort it: abort it now.
            _ = try? await uploader.send("DELETE", key: key, query: [("uploadId", id)])
            throw error
        }
    }

    /// ListParts: keeps the parts S3 holds in the expected sizes whose ETag is the MD5 of the
    /// file's bytes there (a part the store holds other bytes for is sent again). An upload S3 no longer knows is
    /// either already completed (the object exists with this content hash: done) or started over.
    func synchronise() async throws(TransferError) -> UploadReceipt? {
        switch try await listParts() {
        case .parts(let listed):
            let count = partCount
            parts = [:]
            for part in listed where (1...count).contains(part.number) && part.size == expectedSize(of: part.number) {
                let bare = S3StoreProof.bare(part.etag)
                if S3StoreProof.isMD5Form(bare, multipart: false), bare != Hex.string(try digests(ofPart: part.number).md5) { continue }
                parts[part.number] = part
            }
            try saveCheckpoint()
            return nil
        case .noSuchUpload:
            if let done = try await existingObject() { return done }
            guard restartsLeft > 0 else {
                throw TransferError(.badServerResponse, "S3 lost the multipart upload again after it was started over")
            }
            restartsLeft -= 1
            uploadID = nil
            parts = [:]
            resumedFrom = nil
            try await create()
            return nil
        }
    }

    private func listParts() async throws(TransferError) -> Listing {
        guard let uploadID else { return .noSuchUpload }
        var listed: [S3Part] = []
        var marker: String?
        while true {
            try checkCancelled()
            var query: [(name: String, value: String)] = [("uploadId", uploadID), ("max-parts", "1000")]
            if let marker { query.append(("part-number-marker", marker)) }
            let response = try await uploader.send("GET", key: key, query: query)
            if response.status == 404 {
                let code = S3Failure.errorCode(in: response.body)
                if code == nil || code == "NoSuchUpload" { return .noSuchUpload }
            }
            guard response.status == 200 else {
                throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "ListParts")
            }
            let text = Substring(String(decoding: response.body, as: UTF8.self))
            for element in S3XML.elements("Part", in: text) {
                guard let number = S3XML.value("PartNumber", in: element).flatMap({ Int($0) }),
                      let etag = S3XML.value("ETag", in: element), !etag.isEmpty,
                      let size = S3XML.value("Size", in: element).flatMap({ Int64($0) }) else {
                    throw TransferError(.badServerResponse, "ListParts: S3 listed a part without number, ETag or size")
                }
                listed.append(S3Part(number: number, etag: etag, size: size))
            }
            guard S3XML.value("IsTruncated", in: text) == "true" else { return .parts(listed) }
            guard let next = S3XML.value("NextPartNumberMarker", in: text), next != marker else {
                throw TransferError(.badServerResponse, "ListParts: a truncated listing without a new marker")
            }
            marker = next
        }
    }

    /// HEAD of the object: a receipt when it exists and the store's figures show it holds this
    /// file's bytes (an earlier run completed the upload but stopped before recording it).
    func existingObject() async throws(TransferError) -> UploadReceipt? {
        let response = try await uploader.send("HEAD", key: key, headers: [("x-amz-checksum-mode", "ENABLED")])
        guard response.status == 200, response.headers["content-length"].flatMap({ Int64($0) }) == size,
              let etag = response.headers["etag"] else { return nil }
        guard case .matches(let figure) = try multipartProof().check(headers: response.headers, etag: etag) else { return nil }
        progress(UploadProgress(acknowledgedBytes: size, totalBytes: size))
        return receipt(status: response.status, headers: response.headers, etag: etag, multipart: true, figure: figure)
    }

    func uploadMissingParts() async throws(TransferError) {
        guard let uploadID else { throw TransferError(.invalidRequest, "no multipart upload to add parts to") }
        for number in 1...partCount where parts[number] == nil {
            try checkCancelled()
            let offset = Int64(number - 1) * partSize
            let length = expectedSize(of: number)
            let digests = try digests(ofPart: number)
            var headers = [("content-md5", Data(digests.md5).base64EncodedString())]
            if checksumAlgorithm != nil { headers.append(("x-amz-checksum-sha256", Data(digests.sha256).base64EncodedString())) }
            let response = try await uploader.send("PUT", key: key,
                                                   query: [("partNumber", String(number)), ("uploadId", uploadID)],
                                                   headers: headers, body: .file(path: path, offset: offset, length: length),
                                                   payloadHash: Hex.string(digests.sha256))
            bytesSent += response.bytesSent
            guard response.status == 200 else {
                throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "UploadPart")
            }
            guard let etag = response.headers["etag"], !etag.isEmpty else {
                throw Self.truncated("UploadPart: S3 sent no ETag")
            }
            let bare = S3StoreProof.bare(etag)
            if S3StoreProof.isMD5Form(bare, multipart: false), bare != Hex.string(digests.md5) {
                // The store holds other bytes for this part than the file's: send it again.
                throw TransferError(.corruptedInTransit, "UploadPart: the store's ETag for part \(number) is not the MD5 of the file's "
                                    + "bytes there (they changed on the way)", httpStatus: 200, classification: .transient)
            }
            parts[number] = S3Part(number: number, etag: etag, size: length)
            try saveCheckpoint()
            progress(UploadProgress(acknowledgedBytes: acknowledgedBytes, totalBytes: size))
        }
    }

    /// CompleteMultipartUpload. S3 may answer 200 and still fail (an `<Error>` body), so the body
    /// is always read.
    func complete() async throws(TransferError) -> UploadReceipt {
        guard uploadID != nil else { throw TransferError(.invalidRequest, "no multipart upload to complete") }
        try checkCancelled()
        let proof = try multipartProof()
        try await checkWholeFileBeforeCompleting()
        guard let uploadID else { throw TransferError(.invalidRequest, "no multipart upload to complete") }
        var xml = "<CompleteMultipartUpload>"
        for number in 1...partCount {
            guard let part = parts[number] else {
                throw TransferError(.badServerResponse, "part \(number) is missing before completion", classification: .transient)
            }
            xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\(Markup.escape(part.etag))</ETag>"
            if checksumAlgorithm != nil {
                xml += "<ChecksumSHA256>\(Data(try digests(ofPart: number).sha256).base64EncodedString())</ChecksumSHA256>"
            }
            xml += "</Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let response = try await uploader.send("POST", key: key, query: [("uploadId", uploadID)],
                                               headers: [("content-type", "application/xml")], body: .bytes(Array(xml.utf8)))
        guard response.status == 200, S3Failure.errorCode(in: response.body) == nil else {
            throw S3Failure.error(status: response.status, body: response.body, headers: response.headers, operation: "CompleteMultipartUpload")
        }
        guard let etag = S3XML.value("ETag", in: response.body) ?? response.headers["etag"], !etag.isEmpty else {
            throw Self.truncated("CompleteMultipartUpload: S3's answer had no ETag")
        }
        // The completion's body carries the checksum as an element; the proof reads it as a header.
        var figures = response.headers
        if let checksum = S3XML.value("ChecksumSHA256", in: response.body) { figures["x-amz-checksum-sha256"] = checksum }
        let receipt = try await provenReceipt(proof, status: response.status, headers: figures, etag: etag, multipart: true)
        progress(UploadProgress(acknowledgedBytes: size, totalBytes: size))
        return receipt
    }

    // MARK: Helpers

    /// Waits before another try of a transient failure, or rethrows when none is left.
    func recover(from error: TransferError) async throws(TransferError) {
        // Other bytes at the store may be the file's own doing (rewritten since it was hashed):
        // that is no fault of the way, and sending it again would not help.
        if error.code == .corruptedInTransit, let now = try? FileDigest.sha256(path: path), now != sha256 {
            throw Self.changedSinceHashing
        }
        guard error.isTransient, retriesLeft > 0, !Task.isCancelled else { throw error }
        let attempt = configuration.maxRetriesPerUpload - retriesLeft + 1
        retriesLeft -= 1
        do {
            try await Task.sleep(for: configuration.retryBackoff * attempt)
        } catch {
            throw TransferError(.cancelled, "the transfer was cancelled")
        }
    }

    /// A 200 without the field every such answer carries. Over HTTP/1.0 (or with a lost
    /// `Content-Length`) a connection cut mid-answer still reads as a short 200, so this is treated
    /// as a lost answer: transient, and the next try re-checks with ListParts.
    static func truncated(_ message: String) -> TransferError {
        TransferError(.badServerResponse, message, httpStatus: 200, classification: .transient)
    }

    static var changedSinceHashing: TransferError {
        TransferError(.fileUnreadable, "the file changed since it was hashed (it is sent again once analysed again)")
    }

    func checkCancelled() throws(TransferError) {
        if Task.isCancelled { throw TransferError(.cancelled, "the transfer was cancelled") }
    }

    var partCount: Int { max(1, Int((size + partSize - 1) / partSize)) }

    func expectedSize(of number: Int) -> Int64 {
        let offset = Int64(number - 1) * partSize
        return min(partSize, size - offset)
    }

    var acknowledgedBytes: Int64 { parts.values.reduce(0) { $0 + $1.size } }

    func saveCheckpoint() throws(TransferError) {
        let saved = UploadCheckpoint(location: configuration.objectURI(key: key), offset: acknowledgedBytes, interopVersion: 0,
                                     uploadID: uploadID, partSize: partSize,
                                     parts: parts.values.sorted { $0.number < $1.number }, checksumAlgorithm: checksumAlgorithm)
        do {
            try checkpoint(saved)
        } catch {
            throw TransferError(.checkpointFailed, "the upload checkpoint could not be saved")
        }
    }

    /// The receipt; `figure` is the store's figure that proved it (`etag:…` or `sha256:…`), kept
    /// in the headers as `x-photodrain-proof` for the record.
    func receipt(status: Int, headers: [String: String], etag: String, multipart: Bool, figure: String?) -> UploadReceipt {
        let bare = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        var headers = headers
        headers["etag"] = etag
        if let figure { headers[Self.proofHeader] = figure }
        return UploadReceipt(serverID: "\(key) \(bare)", status: status, headers: headers, bytesSent: bytesSent,
                             location: configuration.objectURI(key: key), resumable: multipart, resumedFromOffset: resumedFrom)
    }
}
