/// The constants of "Resumable Uploads for HTTP" (draft-ietf-httpbis-resumable-upload) and of
/// PhotoDrain's own upload headers, shared by the client (Transfer) and the receiver (Receiver).
/// Header names are lowercase: both sides store and compare them that way.
public enum ResumableUpload {
    /// The interop versions PhotoDrain speaks: 3 (draft -01) to 8 (drafts -09 to -12).
    public static let supportedInteropVersions: ClosedRange<Int> = 3...8
    /// The client's default interop version.
    public static let defaultInteropVersion = 6

    public enum Header {
        public static let interopVersion = "upload-draft-interop-version"
        public static let uploadOffset = "upload-offset"
        public static let uploadLength = "upload-length"
        /// Interop 4 and later.
        public static let uploadComplete = "upload-complete"
        /// Interop 3 only: the inverse of `upload-complete`.
        public static let uploadIncomplete = "upload-incomplete"
        public static let uploadLimit = "upload-limit"
        public static let location = "location"
        public static let contentType = "content-type"
        public static let contentLength = "content-length"
        public static let cacheControl = "cache-control"
        /// RFC 9530 digest of the whole representation: `sha-256=:<base64>:`.
        public static let reprDigest = "repr-digest"
        /// The asset's content SHA-256 (hex): the receiver dedupes on it.
        public static let idempotencyKey = "idempotency-key"
        public static let contentDisposition = "content-disposition"
        /// The photo's verdict as compact JSON.
        public static let verdict = "x-verdict"
        /// The id of the stored object, on the final response.
        public static let serverResourceID = "x-server-resource-id"
        public static let authorization = "authorization"
    }

    /// The media type of a PATCH body from interop 6 on.
    public static let partialUploadMediaType = "application/partial-upload"
    /// The interim status that carries the upload URL.
    public static let uploadResumptionSupported = 104
    /// RFC 9457 problem type for a 409 offset mismatch.
    public static let mismatchingOffsetProblem =
        "https://iana.org/assignments/http-problem-types#mismatching-upload-offset"
    /// RFC 9457 problem type for an append to a completed upload.
    public static let completedUploadProblem =
        "https://iana.org/assignments/http-problem-types#completed-upload"
    /// RFC 9457 problem type (interop 7 on) for a request whose length contradicts `Upload-Length`.
    public static let inconsistentLengthProblem =
        "https://iana.org/assignments/http-problem-types#inconsistent-upload-length"
    /// `photodrain serve`'s problem type (403) for a device token whose scope does not allow the
    /// request; its `scope` member and `detail` name the scope needed. A tag URI: a name, not a page.
    public static let insufficientScopeProblem = "tag:photodrain.invalid,2026:insufficient-scope"
    /// `photodrain serve`'s problem type (507) for an upload that would take its account past the
    /// account's quota (members `quota`, `used`, `upload-length`).
    public static let quotaExceededProblem = "tag:photodrain.invalid,2026:quota-exceeded"
    /// `photodrain serve`'s problem type (429) for a device token with too many uploads in progress.
    public static let tooManyUploadsProblem = "tag:photodrain.invalid,2026:too-many-uploads"
    /// `photodrain serve`'s problem type (429) for a request without a valid token from an address
    /// that failed to authenticate too often (members `limit`, `window`): a refusal of the token,
    /// as a `401` is.
    public static let tooManyFailedAuthenticationsProblem = "tag:photodrain.invalid,2026:too-many-failed-authentications"

    /// The header that says whether a request completes the upload, in the given interop version,
    /// as a (name, value) pair: `upload-incomplete: ?0` for 3, `upload-complete: ?1` from 4.
    public static func completionHeader(complete: Bool, interopVersion: Int) -> (name: String, value: String) {
        if interopVersion <= 3 {
            return (Header.uploadIncomplete, complete ? "?0" : "?1")
        }
        return (Header.uploadComplete, complete ? "?1" : "?0")
    }

    /// Reads the completion flag from lowercased headers in either form; nil when absent or malformed.
    public static func isComplete(headers: [String: String]) -> Bool? {
        if let value = headers[Header.uploadComplete] { return StructuredField.boolean(value) }
        if let value = headers[Header.uploadIncomplete], let incomplete = StructuredField.boolean(value) {
            return !incomplete
        }
        return nil
    }

    /// The `Content-Disposition` value for a file name: `inline; filename="ascii"; filename*=UTF-8''pct`.
    public static func contentDisposition(filename: String) -> String {
        contentDisposition(filename: Array(filename.utf8))
    }

    /// The `Content-Disposition` value for a file name given as bytes, which need not be valid
    /// UTF-8: `filename*` percent-encodes them as they are (a name from a Latin-1 file system keeps
    /// its bytes; `filenameBytes(fromContentDisposition:)` gives them back).
    public static func contentDisposition(filename: [UInt8]) -> String {
        var ascii = ""
        var encoded = ""
        for byte in filename {
            let c = Character(Unicode.Scalar(byte))
            let isAttrChar = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
                || (byte >= 0x61 && byte <= 0x7A) || "!#$&+-.^_`|~".utf8.contains(byte)
            encoded += isAttrChar ? String(c) : "%" + hex2(byte)
            if byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C { ascii.append(c) } else { ascii += "_" }
        }
        return "inline; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

    /// The file name from a `Content-Disposition` value, preferring `filename*`; nil when none.
    public static func filename(fromContentDisposition value: String) -> String? {
        var plain: String?
        for part in value.split(separator: ";") {
            let trimmed = part.drop { $0 == " " }
            if trimmed.lowercased().hasPrefix("filename*=") {
                // charset'language'value: the value follows the second apostrophe.
                let rest = trimmed.dropFirst("filename*=".count).split(separator: "'", maxSplits: 2,
                                                                      omittingEmptySubsequences: false)
                if rest.count == 3, let decoded = percentDecode(String(rest[2])) { return decoded }
            } else if trimmed.lowercased().hasPrefix("filename=") {
                var name = String(trimmed.dropFirst("filename=".count))
                if name.hasPrefix("\""), name.hasSuffix("\""), name.count >= 2 { name = String(name.dropFirst().dropLast()) }
                plain = name
            }
        }
        return plain
    }

    /// The bytes of `filename*` (percent-decoded, whatever they are) from a `Content-Disposition`
    /// value, else of `filename`; nil when it names none.
    public static func filenameBytes(fromContentDisposition value: String) -> [UInt8]? {
        var plain: [UInt8]?
        for part in value.split(separator: ";") {
            let trimmed = part.drop { $0 == " " }
            if trimmed.lowercased().hasPrefix("filename*=") {
                let rest = trimmed.dropFirst("filename*=".count).split(separator: "'", maxSplits: 2,
                                                                      omittingEmptySubsequences: false)
                if rest.count == 3, let decoded = Provenance.percentDecode(String(rest[2])) { return decoded }
            } else if trimmed.lowercased().hasPrefix("filename=") {
                var name = String(trimmed.dropFirst("filename=".count))
                if name.hasPrefix("\""), name.hasSuffix("\""), name.count >= 2 { name = String(name.dropFirst().dropLast()) }
                plain = Array(name.utf8)
            }
        }
        return plain
    }

    /// The `Repr-Digest` value for a SHA-256 digest.
    public static func reprDigest(sha256: [UInt8]) -> String {
        "sha-256=:" + Base64.encode(sha256) + ":"
    }

    /// The SHA-256 digest named in a `Repr-Digest` value, or nil.
    public static func sha256(fromReprDigest value: String) -> [UInt8]? {
        guard let members = StructuredField.dictionary(value),
              let item = members.last(where: { $0.key == "sha-256" })?.value,
              case .bytes(let digest) = item, digest.count == 32 else { return nil }
        return digest
    }

    private static func hex2(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }

    private static func percentDecode(_ text: String) -> String? {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let c = bytes.popFirst() {
            if c == UInt8(ascii: "%") {
                guard bytes.count >= 2, let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) else {
                    return nil
                }
                out.append(v)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(c)
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
