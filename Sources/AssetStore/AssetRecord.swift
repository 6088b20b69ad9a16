import UploadProtocol
/// One photo's row: identity, the banked verdict, and the four timestamps the runners coordinate by.
public struct AssetRecord: Sendable, Equatable, Codable {
    /// Where a photo stands.
    public enum State: String, Sendable, Codable, CaseIterable {
        /// Seen by a scan, not analysed yet.
        case discovered
        /// A verdict is banked (possibly an undecodable-photo verdict); not uploaded yet.
        case analyzed
        /// The destination acknowledged it and showed it holds these bytes (or the mark predates
        /// proof of receipt: `uploadProof` is `nil`).
        case uploaded
        /// The destination acknowledged it without proof (`--accept-unverified`).
        case uploadedUnverified = "uploaded-unverified"
        /// Gave up after the retry limit or a permanent error.
        case failed
    }

    public let id: Int64
    /// Path relative to the library root, `/`-separated. When its bytes are not valid UTF-8 this
    /// shows them with `\xHH` escapes and `rawPath` has them.
    public let path: String
    /// The path's bytes when they are not valid UTF-8; nil when `path` is them.
    public let rawPath: [UInt8]?
    /// The path's bytes, as the file system names the file.
    public var libraryPath: [UInt8] { rawPath ?? Array(path.utf8) }
    public let size: Int
    /// Modification time in nanoseconds since the epoch.
    public let mtimeNanoseconds: Int64
    /// Bumped each time the file changes; conditional updates name it so late results are dropped.
    public let generation: Int
    /// Hex SHA-256 of the content, set when analysed.
    public let sha256: String?
    public let format: String?
    public let width: Int?
    public let height: Int?
    /// The verdict as compact JSON.
    public let verdictJSON: String?
    public let label: String?
    public let faceCount: Int?
    public let score: Double?
    /// The decode error code when the photo could not be decoded.
    public let analysisError: String?
    public let discoveredAt: Double
    public let analyzedAt: Double?
    public let lastAttemptAt: Double?
    public let uploadedAt: Double?
    /// Counted upload failures.
    public let attempts: Int
    public let lastError: String?
    public let serverID: String?
    public let failed: Bool
    /// How the active destination's upload mark was proven: nil when the photo is not uploaded
    /// there or the mark predates proof of receipt (store migration 7).
    public let uploadProof: ReceiptProof?
    /// For a companion file (a Live Photo's video, an `.AAE`, an `.xmp` of the same name beside a
    /// photo): the photo's path. It is uploaded after the photo, carrying the photo's verdict.
    public let companionOf: String?
    /// The `capture_date` column: nil when not read, '' when the file has none.
    let bankedCaptureDate: String?
    /// The EXIF `DateTimeOriginal` analysis read (`YYYY:MM:DD HH:MM:SS`); nil when the file has
    /// none, or when `captureDateBanked` is false.
    public var captureDate: String? { bankedCaptureDate.flatMap { $0.isEmpty ? nil : $0 } }
    /// True once the capture date is known: banked with the verdict, or read since. False for a
    /// row not analysed yet, or analysed before capture dates were banked (store migration 8).
    public var captureDateBanked: Bool { bankedCaptureDate != nil }

    /// The `label` of a file's verdict when it is not a photo PhotoDrain analyses (a video, a raw
    /// photo, a document): terminal, and kept out of uploads unless a runner is asked to send it.
    public static let unanalysableLabel = "unanalysable"

    /// The `label` of a companion file (see `companionOf`).
    public static let companionLabel = "companion"

    /// True when the verdict is `unanalysable`.
    public var isUnanalysable: Bool { label == Self.unanalysableLabel }

    public var state: State {
        if failed { return .failed }
        if uploadedAt != nil { return uploadProof == .unverified ? .uploadedUnverified : .uploaded }
        if analyzedAt != nil { return .analyzed }
        return .discovered
    }

    /// The SELECT list `init(row:)` reads, made from `AssetColumn` (never written out by hand).
    static let columns = AssetColumn.selectList

    /// A row selected with `columns` first (further values after them are the query's own).
    init(row values: [SQLValue]) {
        let r = AssetColumn.Row(values)
        id = Int64(r[.id].int ?? 0)
        path = r[.path].string ?? ""
        size = r[.size].int ?? 0
        mtimeNanoseconds = Int64(r[.mtime].int ?? 0)
        generation = r[.generation].int ?? 0
        sha256 = r[.sha256].string
        format = r[.format].string
        width = r[.width].int
        height = r[.height].int
        verdictJSON = r[.verdict].string
        label = r[.label].string
        faceCount = r[.faceCount].int
        score = r[.score].double
        analysisError = r[.analysisError].string
        discoveredAt = r[.discoveredAt].double ?? 0
        analyzedAt = r[.analyzedAt].double
        lastAttemptAt = r[.lastAttemptAt].double
        uploadedAt = r[.uploadedAt].double
        attempts = r[.attempts].int ?? 0
        lastError = r[.lastError].string
        serverID = r[.serverID].string
        failed = (r[.failed].int ?? 0) != 0
        rawPath = r[.rawPath].string.flatMap(Hex.bytes(fromHex:))
        uploadProof = r[.uploadProof].string.flatMap(ReceiptProof.init(rawValue:))
        companionOf = r[.companionOf].string
        bankedCaptureDate = r[.captureDate].string
    }

}

/// A verdict ready to bank: the JSON the runners store and upload, the few fields the store
/// indexes for `status` and `report`, and what analysis learnt of the file (digest, format, upright
/// size, capture date). The runners make it from FaceAnalysis's `Verdict`, which the store does not
/// know.
public struct BankedVerdict: Sendable, Equatable {
    public var json: String
    public var label: String?
    public var faceCount: Int
    public var score: Double?
    /// The decode error code when the photo is undecodable (its verdict is then terminal).
    public var analysisError: String?
    public var sha256: String?
    public var format: String?
    public var width: Int?
    public var height: Int?
    /// The EXIF `DateTimeOriginal` analysis read; nil when the file has none. Uploads send it.
    public var captureDate: String?
    /// The verdict's confirmed faces, a row each in `faces`, banked in the verdict's transaction.
    public var faces: [BankedFace] = []

    public init(json: String, label: String?, faceCount: Int, score: Double?, analysisError: String? = nil,
                sha256: String? = nil, format: String? = nil, width: Int? = nil, height: Int? = nil,
                captureDate: String? = nil) {
        self.json = json
        self.label = label
        self.faceCount = faceCount
        self.score = score
        self.analysisError = analysisError
        self.sha256 = sha256
        self.format = format
        self.width = width
        self.height = height
        self.captureDate = captureDate
    }
}
