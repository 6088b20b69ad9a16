/// What a `LibraryWatcher` saw since it was last asked.
public struct LibraryChanges: Sendable, Equatable {
    /// The folders in which an entry was created, written and closed, moved in or out, deleted,
    /// or had its attributes changed: relative to the library, as bytes (names need not be UTF-8),
    /// `/`-separated; empty for the library folder itself.
    public var folders: Set<[UInt8]> = []
    /// Events were lost (the kernel's queue overflowed), or the library came back: only a full
    /// walk (every folder read) is sure to find every change.
    public var fullScan = false
    /// The library folder went away (unmounted, deleted, moved): scanning it now would see every
    /// photo removed. Until `cameBack`, nothing under it is watched.
    public var wentAway = false
    /// The library folder is there again (and watched again); `fullScan` is set with it.
    public var cameBack = false

    public init() {}

    /// Nothing happened.
    public var isEmpty: Bool { folders.isEmpty && !fullScan && !wentAway && !cameBack }

    /// The folders as text, sorted, for messages and tests (bytes that are not UTF-8 replaced).
    public var folderNames: [String] { folders.map { String(decoding: $0, as: UTF8.self) }.sorted() }

    /// Adds what `later` saw: a return cancels an earlier departure and the other way round.
    public mutating func merge(_ later: LibraryChanges) {
        folders.formUnion(later.folders)
        fullScan = fullScan || later.fullScan
        if later.wentAway {
            wentAway = true
            cameBack = false
            folders = []
        }
        if later.cameBack { cameBack = true }
    }
}
