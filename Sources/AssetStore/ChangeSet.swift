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
    /// Photos seen in the folder.
    public var photoCount: Int
    /// Directories or files that could not be read.
    public var problems: [ScanProblem]
}

/// Counts of photos by state, for `status`.
public struct StatusCounts: Sendable, Equatable, Codable {
    public var total = 0
    /// Not analysed yet.
    public var discovered = 0
    /// Analysed (verdict banked), waiting for upload.
    public var analyzed = 0
    public var uploaded = 0
    public var failed = 0
    /// Of the analysed/uploaded/failed: photos whose verdict is a decode error.
    public var undecodable = 0
    /// Photos whose verdict found at least one face.
    public var withFaces = 0
    /// Faces over all verdicts.
    public var faces = 0
    /// Files and folders the last scan found but could not take into the library (a name that
    /// is not UTF-8, a folder it may not read): not photos of the library, but never silently.
    public var skipped = 0
}
