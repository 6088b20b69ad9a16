import Foundation
import SystemSupport
import UploadProtocol

/// The proof of receipt an S3-compatible store gives: figures the *store* computed from the bytes
/// it holds, compared with the same figures computed here from the file. Our own
/// `x-amz-meta-sha256` is no proof (the store echoes back whatever it was sent), so it is never
/// compared for the proof.
///
/// Two figures count:
/// - the ETag: S3 and the stores that copy it answer a single PUT with the MD5 of the bytes they
///   stored, and a multipart upload with the MD5 of its parts' MD5s followed by `-N`;
/// - the SHA-256 checksum (`x-amz-checksum-sha256`, base64), which the store returns when the
///   upload named it, for a multipart upload as the SHA-256 of the parts' SHA-256s, `-N`.
///
/// Either one matching proves the store holds these bytes. One in its expected form that differs
/// proves it holds other bytes. A store that gives neither (an ETag that is no MD5, as with
/// SSE-KMS, and no checksum) proves nothing.
struct S3StoreProof: Sendable, Equatable {
    /// The ETag this file gets from an honest store, bare and lowercase.
    let expectedETag: String
    /// The checksum this file gets from an honest store, base64 (with `-N` for multipart).
    let expectedChecksum: String
    /// The number of parts for a multipart upload; nil for a single PUT.
    let partCount: Int?

    /// What the store's answer showed.
    enum Outcome: Sendable, Equatable {
        /// A figure the store computed matches the file's: `figure` names it (for the record).
        case matches(figure: String)
        /// A figure the store computed is in the expected form and differs: it holds other bytes.
        case differs(reason: String)
        /// The store gave no figure of its own that could be compared.
        case absent
    }

    /// The figures of a file sent in one PUT: its MD5 and SHA-256.
    init(md5: [UInt8], sha256: [UInt8]) {
        expectedETag = Hex.string(md5)
        expectedChecksum = Data(sha256).base64EncodedString()
        partCount = nil
    }

    /// The figures of a file sent in parts, from each part's MD5 and SHA-256 in part order.
    /// Throws `TransferError` only if libcrypto fails.
    init(partMD5s: [[UInt8]], partSHA256s: [[UInt8]]) throws(TransferError) {
        let count = partMD5s.count
        let md5 = try TransferError.translating { () throws(SystemError) in try MD5.digest(partMD5s.flatMap { $0 }) }
        let sha = try FileDigest.sha256(bytes: partSHA256s.flatMap { $0 })
        expectedETag = Hex.string(md5) + "-\(count)"
        expectedChecksum = Data(sha).base64EncodedString() + "-\(count)"
        partCount = count
    }

    /// Compares the store's figures in `headers` (names lowercased), with `etag` given apart when
    /// it came in a body (CompleteMultipartUpload's XML). The checksum is read first: when the
    /// store computed one, it is the stronger figure.
    func check(headers: [String: String], etag: String?) -> Outcome {
        if let checksum = headers["x-amz-checksum-sha256"]?.trimmingCharacters(in: .whitespaces), !checksum.isEmpty {
            if checksum == expectedChecksum { return .matches(figure: "sha256:" + checksum) }
            // A multipart object's checksum comes in forms stores disagree on (with or without its
            // `-N`, composite or whole-object): only a single PUT's that differs is evidence.
            if partCount == nil && !checksum.contains("-") {
                return .differs(reason: "the store's SHA-256 of the object (\(checksum)) is not the file's (\(expectedChecksum))")
            }
        }
        guard let raw = etag ?? headers["etag"] else { return .absent }
        let bare = Self.bare(raw)
        if bare == expectedETag { return .matches(figure: "etag:" + bare) }
        if Self.isMD5Form(bare, multipart: partCount != nil) {
            return .differs(reason: "the store's ETag (\(bare)) is not the MD5 of the file's bytes (\(expectedETag))")
        }
        return .absent
    }

    /// An ETag without its quotes (and weak marker), lowercase.
    static func bare(_ etag: String) -> String {
        var text = etag.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("W/") { text.removeFirst(2) }
        return text.trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased()
    }

    /// True for 32 hex digits (a single PUT's MD5), or 32 hex digits, `-` and a part count.
    static func isMD5Form(_ bare: String, multipart: Bool) -> Bool {
        let pieces = bare.split(separator: "-", omittingEmptySubsequences: false)
        let hex = pieces.first.map { $0.count == 32 && $0.allSatisfy(\.isHexDigit) } ?? false
        if multipart { return hex && pieces.count == 2 && Int(pieces[1]) != nil }
        return hex && pieces.count == 1
    }
}

extension FileDigest {
    /// The MD5 and SHA-256 of `length` bytes of the file at `path` from `offset`, in one read:
    /// what an S3 part's `Content-MD5`, checksum and signature need. Throws `TransferError`
    /// (`file-unreadable`) when the file cannot be read or ends before the range does.
    /// `alsoFeeding`, when given, is fed the same bytes (a running digest of the whole file).
    static func md5AndSHA256(path: String, offset: Int64, length: Int64,
                             alsoFeeding whole: SHA256? = nil) throws(TransferError) -> (md5: [UInt8], sha256: [UInt8]) {
        let file = try TransferError.translating { () throws(SystemError) in try ReadOnlyFile(path: path) }
        return try TransferError.translating(unreadable: "the file could not be read while hashing") { () throws(SystemError) in
            let md5 = try MD5()
            let sha = try SHA256()
            try file.forEachChunk(offset: offset, length: length, chunk: SHA256.fileChunk) { (piece) throws(SystemError) in
                try md5.update(piece)
                try sha.update(piece)
                try whole?.update(piece)
            }
            return (try md5.finish(), try sha.finish())
        }
    }

    /// The SHA-256 and MD5 of the whole file at `path` in one read; `stop`, once set, ends the
    /// work at the next chunk with `cancelled`. Throws as `md5AndSHA256`.
    static func sha256AndMD5(path: String, stop: CancellationFlag) throws(TransferError) -> (sha256: [UInt8], md5: [UInt8]) {
        let file = try TransferError.translating { () throws(SystemError) in try ReadOnlyFile(path: path) }
        return try TransferError.translating(unreadable: "the file could not be read while hashing") { () throws(SystemError) in
            let md5 = try MD5()
            let sha = try SHA256()
            try file.forEachChunk(chunk: SHA256.fileChunk, shouldStop: { stop.isCancelled }) { (piece) throws(SystemError) in
                try sha.update(piece)
                try md5.update(piece)
            }
            return (try sha.finish(), try md5.finish())
        }
    }

    /// The MD5 of `length` bytes of the file at `path` from `offset` (a single PUT's
    /// `Content-MD5`, whose SHA-256 analysis already knows). Throws as `md5AndSHA256`.
    static func md5(path: String, offset: Int64, length: Int64) throws(TransferError) -> [UInt8] {
        let file = try TransferError.translating { () throws(SystemError) in try ReadOnlyFile(path: path) }
        return try TransferError.translating(unreadable: "the file could not be read while hashing") { () throws(SystemError) in
            let md5 = try MD5()
            try file.forEachChunk(offset: offset, length: length, chunk: SHA256.fileChunk) { (piece) throws(SystemError) in
                try md5.update(piece)
            }
            return try md5.finish()
        }
    }
}
