import UploadProtocol

/// Where an object's photo came from, as the client sent it (`X-Photo-*` headers, see
/// `Provenance`), kept in the object's sidecar and listed by `GET /objects`.
public struct ObjectProvenance: Codable, Sendable, Equatable {
    /// The path relative to the client's library, for people: its bytes as UTF-8, any byte that is
    /// not UTF-8 shown as U+FFFD. `pathEncoded` has the exact bytes.
    public var path: String
    /// The path's exact bytes, percent-encoded (`Provenance.percentEncode`): letters, digits and
    /// `-._~/` as they are, every other byte `%HH`. A name that is not valid UTF-8 keeps its bytes here.
    public var pathEncoded: String
    /// The file's modification time, RFC 3339 in UTC with nanoseconds.
    public var mtime: String
    /// The same, in nanoseconds since the epoch.
    public var mtimeNanoseconds: Int64
    /// The file's size in the library, in bytes.
    public var size: Int64
    /// The EXIF `DateTimeOriginal` as the camera wrote it (`YYYY:MM:DD HH:MM:SS`), when sent.
    public var dateTimeOriginal: String?

    /// The record of provenance read from a request.
    public init(_ provenance: Provenance) {
        path = String(decoding: provenance.path, as: UTF8.self)
        pathEncoded = Provenance.percentEncode(provenance.path)
        mtimeNanoseconds = provenance.mtimeNanoseconds
        mtime = Provenance.rfc3339(nanoseconds: provenance.mtimeNanoseconds)
        size = provenance.size
        dateTimeOriginal = provenance.dateTimeOriginal
    }

    /// The path's exact bytes (from `pathEncoded`); nil when that is malformed.
    public var pathBytes: [UInt8]? { Provenance.percentDecode(pathEncoded) }
}
