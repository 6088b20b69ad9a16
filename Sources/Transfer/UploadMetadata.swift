import SystemSupport
import UploadProtocol

/// What travels with every upload besides the bytes: the file name, the content hash (the
/// idempotency key and the `Repr-Digest`), the verdict as compact JSON, and the photo's
/// provenance (library path, mtime, size, EXIF capture date) when it comes from a library.
public struct UploadMetadata: Sendable, Equatable {
    /// The name sent in `Content-Disposition`.
    public var filename: String
    /// The content SHA-256 as 64 hex digits (`FileDigest.sha256Hex(path:)`).
    public var sha256Hex: String
    /// The verdict as one line of compact JSON, sent in `X-Verdict`.
    public var verdictJSON: String
    /// The verdict's summary (FaceAnalysis's `Verdict.summary`), compact JSON, made by the caller
    /// that knows the verdict's type: sent instead of the whole where that does not fit (S3's
    /// 2 KB of metadata). Nil: there is none, and a verdict that does not fit is refused.
    public var verdictSummaryJSON: String?
    /// Where the photo came from (`X-Photo-*` headers; S3: `x-amz-meta-path` and the like); nil
    /// sends none.
    public var provenance: Provenance?
    /// The file name's bytes when they are not valid UTF-8 (`filename` then shows them with
    /// U+FFFD); sent percent-encoded in `filename*` so the receiver keeps the exact bytes.
    public var filenameBytes: [UInt8]?
    /// The file's MD5 when it was computed ahead (`BackgroundDigest(withMD5:)`), for an S3
    /// upload's `Content-MD5` and proof; nil: the upload computes it.
    public var md5: [UInt8]?

    /// Creates metadata.
    public init(filename: String, sha256Hex: String, verdictJSON: String, provenance: Provenance? = nil,
                filenameBytes: [UInt8]? = nil) {
        self.filename = filename
        self.sha256Hex = sha256Hex
        self.verdictJSON = verdictJSON
        self.provenance = provenance
        self.filenameBytes = filenameBytes
    }

    /// Metadata for the file at `path`: its last path component as the name and its SHA-256
    /// computed now (streamed). Throws `TransferError` (`file-unreadable`) when it cannot be read.
    public init(file path: String, verdictJSON: String = "{}") throws(TransferError) {
        self.init(file: path, sha256Hex: try FileDigest.sha256Hex(path: path), verdictJSON: verdictJSON)
    }

    /// Metadata for the file at `path` whose SHA-256 is already known (from the asset store, or a
    /// `BackgroundDigest`): its last path component as the name.
    public init(file path: String, sha256Hex: String, verdictJSON: String = "{}") {
        self.init(filename: Self.filename(of: path), sha256Hex: sha256Hex, verdictJSON: verdictJSON)
    }

    /// Provenance for the file at `path` as it is now (its size and modification time, read from
    /// the file), named `libraryPath` (bytes, relative to the library) and taken at
    /// `dateTimeOriginal`. Throws `TransferError` (`file-unreadable`) when it cannot be read.
    public static func provenance(ofFile path: String, libraryPath: [UInt8],
                                  dateTimeOriginal: String?) throws(TransferError) -> Provenance {
        let stamp = try TransferError.translating { () throws(SystemError) in try ReadOnlyFile(path: path).stamp() }
        return Provenance(path: libraryPath, mtimeNanoseconds: stamp.modifiedNanoseconds, size: stamp.size,
                          dateTimeOriginal: dateTimeOriginal)
    }

    /// The name sent for the file at `path`: its last path component.
    public static func filename(of path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
    }
}
