import Foundation

/// What `photodrain free-space` decides, as values (issue 33): which photos may leave the device
/// and why each of the others stays. Nothing here reads a file, the store or the network: the
/// facts are gathered by `FreeSpaceCheck`, and the truth tables in `FreeSpacePlanTests` pin every
/// rule, so a rule cannot go missing without a test failing.
///
/// A photo (with its companions: Live Photo movie, `.AAE`, `.xmp`) qualifies only when every one
/// of its files has a `verified` proof of receipt at the library's destination, the destination
/// answered just now that it holds those bytes, and the file on disk, hashed again just now, is
/// those bytes. A pair goes together or not at all.
public enum FreeSpacePlan {
    /// How the store's mark at the destination was proven (`AssetStore.uploadedAssets(to:)`).
    public enum Proof: String, Sendable, Equatable {
        /// No mark at the destination for the file's current version.
        case none
        /// The destination showed it holds the bytes (or `verify` confirmed it since).
        case verified
        /// Uploaded with `--accept-unverified`: the destination never showed anything.
        case unverified
        /// A mark from before receipts were proven, never confirmed by `verify`.
        case legacy
    }

    /// What the destination answered now about the file's bytes.
    public enum Answer: Sendable, Equatable {
        /// Not asked (an earlier rule already keeps the file).
        case notAsked
        /// It holds them (`StoredCopy.present`).
        case present
        /// It holds no such object.
        case missing
        /// It holds other bytes under the photo's name or id.
        case mismatched(String)
    }

    /// What the file on disk is now, hashed again.
    public enum Local: Sendable, Equatable {
        /// Not read (an earlier rule already keeps the file).
        case notRead
        /// The same bytes as the store's digest (and the destination was asked for these).
        case same
        /// Other bytes, or another size or stamp than the row's: edited since its upload.
        case changed
        /// It could not be read now (gone, permission, I/O error).
        case unreadable(String)
    }

    /// One file's facts.
    public struct FileFacts: Sendable, Equatable {
        /// Relative to the library.
        public var path: String
        public var size: Int64
        public var proof: Proof
        public var local: Local
        public var answer: Answer
        /// The SHA-256 the file hashed to now (hex), when it was read: what the destination was
        /// asked for, and what a removal checks the file against once more.
        public var digest: String?

        public init(path: String, size: Int64, proof: Proof, local: Local = .notRead, answer: Answer = .notAsked, digest: String? = nil) {
            self.path = path
            self.size = size
            self.proof = proof
            self.local = local
            self.answer = answer
            self.digest = digest
        }
    }

    /// A photo and its companions: what is removed, or kept, as one.
    public struct Group: Sendable, Equatable {
        public var photo: FileFacts
        public var companions: [FileFacts]
        /// Seconds since the epoch: the capture date, else the modification time.
        public var date: Double

        public init(photo: FileFacts, companions: [FileFacts] = [], date: Double) {
            self.photo = photo
            self.companions = companions
            self.date = date
        }

        /// Every file of the group, the photo first.
        public var files: [FileFacts] { [photo] + companions }
        /// The bytes the group's files take.
        public var bytes: Int64 { files.reduce(0) { $0 + $1.size } }
    }

    /// Why a photo stays.
    public indirect enum Reason: Sendable, Equatable {
        case notUploaded
        case unverifiedProof
        case legacyProof
        case changedSinceUpload
        case unreadable(String)
        case missingAtDestination
        case mismatchedAtDestination(String)
        /// A companion keeps its photo (and the photo its companions).
        case companion(path: String, Reason)
        /// Younger than `--older-than`.
        case tooRecent
        /// Among the `--keep-recent` newest.
        case keptRecent
        /// `--until-free` was reached before this one.
        case enoughFree

        /// A stable code, for `--json`.
        public var code: String {
            switch self {
            case .notUploaded: "not-uploaded"
            case .unverifiedProof: "uploaded-unverified"
            case .legacyProof: "proof-not-verified"
            case .changedSinceUpload: "changed-since-upload"
            case .unreadable: "unreadable"
            case .missingAtDestination: "missing-at-destination"
            case .mismatchedAtDestination: "mismatched-at-destination"
            case .companion(_, let reason): "companion-" + reason.code
            case .tooRecent: "too-recent"
            case .keptRecent: "kept-recent"
            case .enoughFree: "enough-free"
            }
        }

        /// Why, for people.
        public var text: String {
            switch self {
            case .notUploaded: "not uploaded to the destination (or changed since)"
            case .unverifiedProof: "uploaded without proof of receipt (--accept-unverified): run photodrain verify"
            case .legacyProof: "uploaded before receipts were proven: run photodrain verify"
            case .changedSinceUpload: "the file changed since its upload"
            case .unreadable(let why): "the file could not be read now: \(why)"
            case .missingAtDestination: "the destination does not hold it now"
            case .mismatchedAtDestination(let why): "the destination holds other bytes: \(why)"
            case .companion(let path, let reason): "its companion \(path) is not safe: \(reason.text)"
            case .tooRecent: "newer than --older-than"
            case .keptRecent: "among the --keep-recent newest"
            case .enoughFree: "--until-free is reached without it"
            }
        }
    }

    /// Why one file is not safe to remove, in the order the checks run (proof, the file now, the
    /// destination now); nil when it is.
    public static func reason(for file: FileFacts) -> Reason? {
        switch file.proof {
        case .none: return .notUploaded
        case .unverified: return .unverifiedProof
        case .legacy: return .legacyProof
        case .verified: break
        }
        switch file.local {
        case .notRead: return .unreadable("not checked")
        case .changed: return .changedSinceUpload
        case .unreadable(let why): return .unreadable(why)
        case .same: break
        }
        switch file.answer {
        case .notAsked, .missing: return .missingAtDestination
        case .mismatched(let why): return .mismatchedAtDestination(why)
        case .present: return nil
        }
    }

    /// Why a group stays: its photo's reason, else its first companion's; nil when every file is safe.
    public static func reason(for group: Group) -> Reason? {
        if let own = reason(for: group.photo) { return own }
        for companion in group.companions {
            if let theirs = reason(for: companion) { return .companion(path: companion.path, theirs) }
        }
        return nil
    }

    /// `--until-free`: a size, or a share of the library's filesystem.
    public enum FreeTarget: Sendable, Equatable {
        case bytes(Int64)
        case fraction(Double)

        /// The free bytes wanted on a filesystem of `total` bytes.
        public func bytes(ofTotal total: Int64) -> Int64 {
            switch self {
            case .bytes(let wanted): wanted
            case .fraction(let share): Int64((Double(total) * share).rounded(.up))
            }
        }
    }

    /// The selection options.
    public struct Selection: Sendable, Equatable {
        /// Only photos at least this old (seconds); nil: any age.
        public var olderThan: Double?
        /// The newest this many photos stay, whatever their age.
        public var keepRecent: Int
        /// Stop once the library's filesystem has this much free.
        public var untilFree: FreeTarget?
        /// A run that would remove more than this share of the library's files removes nothing.
        public var maxFraction: Double

        public init(olderThan: Double? = nil, keepRecent: Int = 0, untilFree: FreeTarget? = nil, maxFraction: Double = 0.5) {
            self.olderThan = olderThan
            self.keepRecent = keepRecent
            self.untilFree = untilFree
            self.maxFraction = maxFraction
        }
    }

    /// Which groups are considered (to be checked, oldest first) and which stay by age alone.
    public struct Consideration: Sendable, Equatable {
        /// Indices into the groups given, oldest first (ties by index).
        public var considered: [Int]
        /// Indices kept by `--keep-recent` or `--older-than`, with why.
        public var kept: [(index: Int, reason: Reason)]

        public static func == (a: Self, b: Self) -> Bool {
            a.considered == b.considered && a.kept.map(\.index) == b.kept.map(\.index) && a.kept.map(\.reason) == b.kept.map(\.reason)
        }
    }

    /// The first stage, before anything is asked: the `keepRecent` newest groups stay, then those
    /// newer than `olderThan` before `now`; the rest are considered, oldest first.
    public static func consider(dates: [Double], selection: Selection, now: Double) -> Consideration {
        let newestFirst = dates.indices.sorted { (dates[$0], $0) > (dates[$1], $1) }
        var result = Consideration(considered: [], kept: [])
        for (rank, index) in newestFirst.enumerated() {
            if rank < selection.keepRecent {
                result.kept.append((index, .keptRecent))
            } else if let age = selection.olderThan, dates[index] > now - age {
                result.kept.append((index, .tooRecent))
            } else {
                result.considered.append(index)
            }
        }
        result.considered.sort { (dates[$0], $0) < (dates[$1], $1) }
        result.kept.sort { $0.index < $1.index }
        return result
    }

    /// The library around the run, for the guards.
    public struct Surroundings: Sendable, Equatable {
        /// Files in the library (every row of the store, companions included).
        public var libraryFiles: Int
        /// True when the library folder holds nothing now but PhotoDrain's own files, or the
        /// last scan found none: an unmounted disk, an emptied folder.
        public var libraryLooksEmpty: Bool
        /// Free and total bytes of the library's filesystem now.
        public var freeBytes: Int64
        public var totalBytes: Int64

        public init(libraryFiles: Int, libraryLooksEmpty: Bool, freeBytes: Int64, totalBytes: Int64) {
            self.libraryFiles = libraryFiles
            self.libraryLooksEmpty = libraryLooksEmpty
            self.freeBytes = freeBytes
            self.totalBytes = totalBytes
        }
    }

    /// Why a whole run removes nothing.
    public enum Stop: Sendable, Equatable {
        /// The library folder is empty or not mounted.
        case libraryLooksEmpty
        /// The run would remove `files` of `of` files, over `--max-fraction`.
        case overMaxFraction(files: Int, of: Int, limit: Double)

        public var code: String {
            switch self {
            case .libraryLooksEmpty: "library-empty"
            case .overMaxFraction: "over-max-fraction"
            }
        }

        public var text: String {
            switch self {
            case .libraryLooksEmpty:
                "the library folder holds no photos now (not mounted, or emptied): nothing is removed while it looks so"
            case .overMaxFraction(let files, let of, let limit):
                "this run would remove \(files) of the library's \(of) files, more than --max-fraction \(Self.percent(limit)); nothing is removed (--max-fraction 100% lifts the limit)"
            }
        }

        static func percent(_ share: Double) -> String {
            let value = share * 100
            return value == value.rounded() ? "\(Int(value))%" : "\(value)%"
        }
    }

    /// What a run does.
    public struct Outcome: Sendable, Equatable {
        /// Groups to remove, oldest first.
        public var remove: [Group]
        /// Groups that stay, with why, in the order given.
        public var keep: [(group: Group, reason: Reason)]
        /// Set when the run removes nothing at all, whatever qualified.
        public var stop: Stop?

        /// What may be removed: nothing when the run stopped, else `remove`. The only list a
        /// removal may take its photos from.
        public var removable: [Group] { stop == nil ? remove : [] }

        /// The bytes the removals free (would free, when the run stopped).
        public var freedBytes: Int64 { remove.reduce(0) { $0 + $1.bytes } }

        public static func == (a: Self, b: Self) -> Bool {
            a.remove == b.remove && a.stop == b.stop && a.keep.map(\.group) == b.keep.map(\.group) && a.keep.map(\.reason) == b.keep.map(\.reason)
        }
    }

    /// The second stage: `checked` are the considered groups with their facts, oldest first.
    /// Each safe group is removed, oldest first, until `--until-free` is reached; then the guards
    /// apply to the whole run: a library that looks empty (whatever qualifies) or a removal over
    /// `--max-fraction` removes nothing (`removable` is empty, and `stop` says why).
    public static func decide(_ checked: [Group], selection: Selection, surroundings: Surroundings) -> Outcome {
        var outcome = Outcome(remove: [], keep: [], stop: nil)
        let wanted = selection.untilFree.map { $0.bytes(ofTotal: surroundings.totalBytes) }
        var free = surroundings.freeBytes
        for group in checked {
            if let why = reason(for: group) {
                outcome.keep.append((group, why))
            } else if let wanted, free >= wanted {
                outcome.keep.append((group, .enoughFree))
            } else {
                outcome.remove.append(group)
                free += group.bytes
            }
        }
        // A library that looks empty stops the run even when nothing qualifies: its photos are
        // somewhere this run cannot see, and the user hears so rather than "nothing to free".
        if surroundings.libraryLooksEmpty {
            outcome.stop = .libraryLooksEmpty
            return outcome
        }
        guard !outcome.remove.isEmpty else { return outcome }
        let files = outcome.remove.reduce(0) { $0 + $1.files.count }
        if Double(files) > selection.maxFraction * Double(max(surroundings.libraryFiles, 1)) {
            outcome.stop = .overMaxFraction(files: files, of: surroundings.libraryFiles, limit: selection.maxFraction)
        }
        return outcome
    }
}
