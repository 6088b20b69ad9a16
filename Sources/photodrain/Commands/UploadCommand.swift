import FaceAnalysis
import Foundation
import PhotoDecoding
import SystemSupport
import Transfer
import UploadProtocol

/// `photodrain upload FILE... --to URL`: resumable (or S3) uploads of given files, no store involved.
enum UploadCommand: Command {
    static let spec = CommandSpec(
        name: "upload",
        abstract: "Upload files directly with resumable uploads or to S3 (no library store).",
        arguments: "FILE...",
        discussion: """
        Each file is sent with its provenance (X-Photo-Path: the path as given, or only the name
        for an absolute path; X-Photo-Mtime, X-Photo-Size, and X-Photo-Taken from EXIF
        DateTimeOriginal when the photo has one) and its SHA-256 as Idempotency-Key and Repr-Digest, so a server that
        dedupes stores it once however often it is sent. Large files are created empty first and
        then appended, so an interrupted upload resumes from the server's offset. Hashing stays off
        the path of the bytes: a small file is hashed while the server stores the one before it; a
        large file is hashed from its bytes as they are sent, and the request that completes the
        upload carries the hash (a file changed meanwhile fails, exit 65, and is not stored).

        An upload that was killed or cut off resumes in the next run: its checkpoint (the upload
        URL or the S3 multipart upload id and parts, never a token) is kept in
        $XDG_STATE_HOME/photodrain/uploads/ (default ~/.local/state/photodrain/uploads/), one file
        per file and destination, until the file is uploaded. A file changed since starts over (its
        old upload is cancelled); a checkpoint older than 7 days is dropped. Each file's line says
        how many bytes the server confirmed, where a resumed upload resumed from, and how many
        bytes had to be sent again after cuts.

        With --to s3://BUCKET/PREFIX each file becomes the object PREFIX/<sha256>-<name> (one PUT,
        or a multipart upload above 16 MiB), its verdict in x-amz-meta-verdict. Credentials come
        from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN) or ~/.aws/credentials
        (AWS_PROFILE) and are never printed.
        """,
        options: TransferOptions.all + [
            .option("verdict", "JSON", "Attach this verdict (compact JSON) as X-Verdict (S3: x-amz-meta-verdict).", default: "{}"),
            .flag("json", "One JSON object per file."),
        ],
        positionals: (1, nil),
        examples: [
            ("photodrain upload IMG_0001.jpg --to http://127.0.0.1:8080/uploads", "one photo to a local receiver"),
            ("photodrain upload *.jpg --to https://photos.example/uploads --token-file ~/.photodrain-token", "with a bearer token"),
            ("photodrain upload IMG_0001.jpg --to s3://photos/library --s3-endpoint http://127.0.0.1:9000", "to an S3-compatible store"),
        ],
        exitCodes: [(0, "every file uploaded"), (1, "a permanent failure (e.g. 403, 413)"), (64, "usage error"),
                    (65, "a file could not be read"), (75, "only transient failures: run again")]
    )

    struct Row: Encodable {
        let file: String
        var serverID: String?
        var resumable: Bool?
        /// Request body bytes this run sent on the wire, counting any sent again after cuts.
        var bytes: Int64?
        /// The file's size.
        var size: Int64?
        /// Bytes the server confirmed holding: the whole file once uploaded; after a failure, what
        /// the last checkpoint confirmed (a later run resumes from there).
        var confirmedBytes: Int64?
        /// Bytes sent beyond those the server was missing: sent again after cuts.
        var resentBytes: Int64?
        /// The offset the server confirmed for the saved upload this run resumed.
        var resumedFrom: Int64?
        /// True when the hash pre-check found the photo on the server (nothing was sent).
        var alreadyStored: Bool?
        /// False when the destination gave no proof it holds the bytes (`--accept-unverified`).
        var verified: Bool?
        var error: String?
        var errorClass: String?
        var message: String?
    }

    /// The path sent as a file's `X-Photo-Path`: as given when relative (without a leading
    /// `./`), only the file name when absolute (the sender's own folders are not the server's business).
    static func sentPath(of file: String) -> String {
        if file.hasPrefix("/") { return UploadMetadata.filename(of: file) }
        var path = Substring(file)
        while path.hasPrefix("./") { path = path.dropFirst(2) }
        return path.isEmpty ? file : String(path)
    }

    /// The line printed for a file: where it went, how many bytes the server confirmed, where a
    /// resumed upload resumed from, and what was sent (and sent again after cuts); for a failure,
    /// the error, what the server had confirmed, and whether a run again resumes (`resumes`: the
    /// upload's checkpoint is kept). What the server sent (its id; the error's message is escaped
    /// where it is made) reaches the terminal with its control characters escaped.
    static func line(for row: Row, resumes: Bool) -> String {
        if let code = row.error {
            var text = "\(row.file): \(Console.shared.red("failed")) \(code) (\(row.errorClass ?? "")): \(row.message ?? "")"
            var facts: [String] = []
            if let confirmed = row.confirmedBytes, confirmed > 0 { facts.append("\(formatBytes(Int(confirmed))) confirmed by the server") }
            if resumes { facts.append("the upload is kept: run again to resume it") }
            if !facts.isEmpty { text += " (\(facts.joined(separator: "; ")))" }
            return text
        }
        var facts = [row.alreadyStored == true ? "already on the server" : row.resumable == true ? "resumable" : "plain"]
        if let offset = row.resumedFrom { facts.append("resumed from \(formatBytes(Int(offset)))") }
        if let confirmed = row.confirmedBytes { facts.append("\(formatBytes(Int(confirmed))) confirmed") }
        facts.append("\(formatBytes(Int(row.bytes ?? 0))) sent")
        if let resent = row.resentBytes, resent > 0 { facts.append("\(formatBytes(Int(resent))) of it sent again after cuts") }
        let unverified = row.verified == false ? "; unverified: the server gave no proof it holds the bytes" : ""
        // The id is the server's text: shown with its control characters escaped.
        return "\(row.file): uploaded as \(TerminalText.escaped(row.serverID ?? "?")) (\(facts.joined(separator: ", "))\(unverified))"
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let uploader = try TransferOptions.destination(arguments)
        let resumption = UploadResumption(uploader: uploader)
        let verdict = arguments.string("verdict") ?? "{}"
        // What S3 sends when the verdict does not fit its 2 KB: the summary of a verdict given
        // in PhotoDrain's own form; other JSON has none.
        let verdictSummary = (try? Verdict.decode(json: verdict)).flatMap { try? $0.summaryJSON() }
        let json = arguments.flag("json")
        var permanent = 0, transient = 0, unreadable = 0
        var certificateRefused = false
        let files = arguments.positionals
        // Hashing stays off the path of the bytes. A file sent whole is hashed one ahead, on its
        // own thread, from the moment the previous file's body has been sent: the server is then
        // storing it and the client's cores would be idle (hashing while a body streams slows the
        // stream). A larger file is hashed from the bytes its appends send, and its last piece,
        // which carries the digest, goes once they are sent. S3 names the object after the
        // digest, so there every file is hashed ahead at once.
        let resumable = uploader as? ResumableUploader
        func hashedAhead(_ path: String) -> Bool {
            guard let resumable else { return true }
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
            return size <= resumable.configuration.optimisticCreationLimit
        }
        // S3 needs each file's MD5 as well (Content-MD5, and the ETag it proves receipt by): the
        // same read ahead gives it.
        let withMD5 = uploader is S3Uploader
        var nextDigest = files.first.map { BackgroundDigest(path: $0, startingNow: hashedAhead($0), withMD5: withMD5) }
        for (index, file) in files.enumerated() {
            var row = Row(file: file)
            let digest = nextDigest ?? BackgroundDigest(path: file, withMD5: withMD5)
            let next = index + 1 < files.count ? BackgroundDigest(path: files[index + 1], startingNow: resumable == nil, withMD5: withMD5) : nil
            let startNextWhenSent = index + 1 < files.count && resumable != nil && hashedAhead(files[index + 1])
            nextDigest = next
            let start = await resumption.start(file)
            row.size = start.file?.size
            // The bytes the server confirmed so far, as the checkpoints tell them.
            var confirmed = start.resumeFrom?.offset
            var kept = start.resumeFrom != nil
            let checkpoint = { (saved: UploadCheckpoint) in
                confirmed = saved.offset
                kept = resumption.save(saved, for: start.file)
            }
            do {
                let receipt: UploadReceipt
                let provenance = try UploadMetadata.provenance(ofFile: file, libraryPath: Array(sentPath(of: file).utf8),
                                                               dateTimeOriginal: CaptureDate.dateTimeOriginal(path: file))
                if let resumable {
                    // A resumed upload's digest cannot be made from the bytes it sends (those
                    // before the saved offset went in an earlier run): hash it meanwhile.
                    if start.resumeFrom != nil { digest.start() }
                    receipt = try await resumable.upload(file: file, filename: UploadMetadata.filename(of: file),
                                                         verdictJSON: verdict, provenance: provenance, digest: digest,
                                                         resumeFrom: start.resumeFrom, checkpoint: checkpoint,
                                                         onBodySent: { if startNextWhenSent { next?.start() } })
                } else {
                    var metadata = UploadMetadata(file: file, sha256Hex: try await digest.sha256Hex(), verdictJSON: verdict)
                    metadata.md5 = digest.md5
                    metadata.verdictSummaryJSON = verdictSummary
                    metadata.provenance = provenance
                    receipt = try await uploader.upload(file: file, metadata: metadata, resumeFrom: start.resumeFrom,
                                                        progress: { _ in }, checkpoint: checkpoint)
                }
                resumption.finished(start.file)
                row.serverID = receipt.serverID
                row.resumable = receipt.resumable
                row.bytes = receipt.bytesSent
                if receipt.alreadyStored { row.alreadyStored = true }
                row.verified = receipt.proof == .verified
                row.resumedFrom = receipt.resumedFromOffset
                if let size = start.file?.size {
                    if receipt.proof == .verified { row.confirmedBytes = size }
                    // What the server was missing when this run began; anything above it went twice.
                    let missing = receipt.alreadyStored ? 0 : size - (receipt.resumedFromOffset ?? 0)
                    row.resentBytes = max(0, receipt.bytesSent - missing)
                }
            } catch {
                row.confirmedBytes = confirmed
                row.error = error.code.rawValue
                row.errorClass = error.classification.rawValue
                row.message = error.message
                if error.code == .tlsFailure && error.classification == .permanent && !error.message.contains("is it http://") { certificateRefused = true }
                switch error.classification {
                case .transient, .deferred: transient += 1
                case .permanent: if error.code == .fileUnreadable { unreadable += 1 } else { permanent += 1 }
                }
            }
            if json {
                Console.shared.json(row)
            } else {
                Console.shared.out(line(for: row, resumes: kept && resumption.isKeeping))
            }
        }
        if certificateRefused { Console.shared.err("photodrain upload: \(TransferOptions.certificateAdvice()).") }
        if permanent > 0 { return .failure }
        if unreadable > 0 { return .dataError }
        return transient > 0 ? .workRemains : .success
    }
}
