import Foundation
import UploadProtocol

/// The headers that carry a photo's metadata on an S3 object. S3 user metadata (`x-amz-meta-*`)
/// must be US-ASCII, and all of it together at most 2 KB. A value of printable ASCII is sent as
/// it is; any other value is sent as one RFC 2047 encoded word, `=?UTF-8?B?<base64 of UTF-8>?=`
/// (what AWS's SDKs do and S3's documentation recommends). A verdict is compact JSON, which never
/// starts with `=`, so a reader tells the two forms apart by the `=?UTF-8?B?` prefix.
public enum S3Metadata {
    /// The header holding the verdict's compact JSON.
    public static let verdictHeader = "x-amz-meta-verdict"
    /// The header holding the content SHA-256 (hex).
    public static let sha256Header = "x-amz-meta-sha256"
    /// The header holding the original file name.
    public static let filenameHeader = "x-amz-meta-filename"
    /// The header holding the photo's path in the library, its bytes percent-encoded
    /// (`Provenance.percentEncode`): exact for any bytes, a name that is not UTF-8 included.
    public static let pathHeader = "x-amz-meta-path"
    /// The header holding the file's modification time (RFC 3339, UTC, nanoseconds).
    public static let mtimeHeader = "x-amz-meta-mtime"
    /// The header holding the file's size in the library, in bytes.
    public static let sizeHeader = "x-amz-meta-size"
    /// The header holding the EXIF `DateTimeOriginal` (percent-encoded like `X-Photo-Taken`).
    public static let takenHeader = "x-amz-meta-taken"
    /// S3's limit on the user metadata of one object, in bytes of names and values.
    public static let limit = 2048

    /// `value` as S3 metadata can carry it: unchanged when printable ASCII, else an RFC 2047 word.
    public static func encode(_ value: String) -> String {
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return value }
        return "=?UTF-8?B?" + Data(value.utf8).base64EncodedString() + "?="
    }

    /// A header value back as text: the decoded word when it is one RFC 2047 `B` word in UTF-8,
    /// else the value itself.
    public static func decode(_ value: String) -> String {
        guard value.hasPrefix("=?UTF-8?B?") || value.hasPrefix("=?utf-8?b?"), value.hasSuffix("?="), value.count > 12 else { return value }
        let payload = value.dropFirst(10).dropLast(2)
        guard let data = Data(base64Encoded: String(payload)), let text = String(data: data, encoding: .utf8) else { return value }
        return text
    }

    /// The metadata headers for an upload, in order: content hash, file name, provenance (when the
    /// metadata has it: path, mtime, size, capture date, all ASCII, the path percent-encoded) and
    /// verdict. A verdict too long for S3's 2 KB limit (a group photo's every box) is replaced by
    /// its summary (`UploadMetadata.verdictSummaryJSON`); the whole verdict stays in the store. Throws
    /// `TransferError` (`invalid-request`, permanent) when even that does not fit (a path of
    /// nearly 2 KB once encoded).
    public static func headers(for metadata: UploadMetadata) throws(TransferError) -> [(name: String, value: String)] {
        func headers(_ verdict: String) -> (headers: [(name: String, value: String)], total: Int) {
            var list: [(name: String, value: String)] = [
                (sha256Header, metadata.sha256Hex.lowercased()),
                (filenameHeader, encode(metadata.filename)),
            ]
            if let provenance = metadata.provenance {
                for (name, value) in provenance.headers {
                    switch name {
                    case Provenance.Header.path: list.append((pathHeader, value))
                    case Provenance.Header.mtime: list.append((mtimeHeader, value))
                    case Provenance.Header.size: list.append((sizeHeader, value))
                    case Provenance.Header.taken: list.append((takenHeader, value))
                    default: break
                    }
                }
            }
            list.append((verdictHeader, encode(verdict)))
            return (list, list.reduce(0) { $0 + $1.name.utf8.count - "x-amz-meta-".utf8.count + $1.value.utf8.count })
        }
        let whole = headers(metadata.verdictJSON)
        if whole.total <= limit { return whole.headers }
        if let summary = metadata.verdictSummaryJSON {
            let short = headers(summary)
            if short.total <= limit { return short.headers }
        }
        throw TransferError(.invalidRequest, "the verdict, file name and path exceed S3's 2 KB metadata limit")
    }

    /// A `Content-Type` from the file name's extension (photos), else `application/octet-stream`.
    public static func contentType(for filename: String) -> String {
        let ext = filename.split(separator: ".").last.map { $0.lowercased() } ?? ""
        switch ext {
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        case "heic": return "image/heic"
        case "heif": return "image/heif"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "tif", "tiff": return "image/tiff"
        default: return "application/octet-stream"
        }
    }
}
