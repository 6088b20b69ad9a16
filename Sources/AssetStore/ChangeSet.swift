/// A position in a store's change history. Pass it back to `changes(since:)` to learn what changed
/// after it. Its text form is `ct-<sequence>`.
public struct ChangeToken: Sendable, Hashable, Codable, CustomStringConvertible {
    public let sequence: Int64

    public init(sequence: Int64) { self.sequence = sequence }

    /// Parses `ct-<n>`.
    public init?(_ text: String) {
        guard text.hasPrefix("ct-"), let n = Int64(text.dropFirst(3)), n >= 0 else { return nil }
        sequence = n
    }

    public var description: String { "ct-\(sequence)" }
}

/// What changed in the library between two tokens, by relative path.
public struct ChangeSet: Sendable, Equatable {
    public var added: [String] = []
    public var modified: [String] = []
    public var removed: [String] = []
    /// The token to ask with next time.
    public var token: ChangeToken

    public var isEmpty: Bool { added.isEmpty && modified.isEmpty && removed.isEmpty }
}

/// The result of a scan: what changed, what could not be read, and the new token.
public struct ScanReport: Sendable, Equatable {
    public var changes: ChangeSet
    /// Files seen in the folder: photos and every other regular file (each is a row).
    public var photoCount: Int
    /// Entries left out, with why: unreadable, or not a regular file inside the library.
    public var problems: [ScanProblem]
    /// Directories this scan read (listed their entries).
    public var directoriesRead = 0
    /// Directories taken as the last scan recorded them, unread: their identity and modification
    /// time had not changed.
    public var directoriesUnchanged = 0
    /// True when every directory was read: asked for, the first scan, or the last full walk too old.
    public var fullWalk = true
    /// Files left for a later scan because they changed within the scan's quiet period: they may
    /// still be being written (a copy in progress). New ones have no row yet; known ones keep theirs.
    public var settling: [String] = []
}

/// Counts of photos by state, for `status`.
public struct StatusCounts: Sendable, Equatable, Codable {
    public var total = 0
    /// Not analysed yet.
    public var discovered = 0
    /// Analysed (verdict banked), waiting for upload; not the unanalysable files.
    public var analyzed = 0
    public var uploaded = 0
    public var failed = 0
    /// Of the analysed/uploaded/failed: photos whose verdict is a decode error (not unanalysable).
    public var undecodable = 0
    /// Photos whose verdict found at least one face.
    public var withFaces = 0
    /// Faces over all verdicts.
    public var faces = 0
    /// Files with an `unanalysable` verdict (not a photo PhotoDrain analyses), not uploaded and not
    /// failed: held back from upload unless the runner is asked to upload them as they are.
    public var unanalysable = 0
    /// Entries the last scan found but could not take into the library (a name that is not
    /// UTF-8, a folder it may not read, a link leading out, a FIFO, ...), those the filter lets
    /// through: not rows of the library, but never silently (`AssetStore.skippedEntries()`).
    public var skipped = 0
    /// Of `uploaded`: accepted by the active destination without proof that it holds the bytes
    /// (`--accept-unverified`).
    public var uploadedUnverified = 0
    /// Of `uploaded`: marked before receipts were proven (store migration 7), not yet checked by
    /// `photodrain verify`.
    public var uploadedUnchecked = 0
    /// Hidden entries (names starting with a dot) the last scan left out of the folders it went
    /// through, each hidden folder counted once; 0 when the store includes hidden files.
    public var hidden = 0
}
