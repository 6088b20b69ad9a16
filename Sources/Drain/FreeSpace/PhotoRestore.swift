import AssetStore
import Foundation
import SystemSupport
import Transfer

/// Brings back what `free-space` removed (issue 33, `photodrain restore`): from the trash by
/// rename when the file is still there with its bytes, else from the destination it was proven
/// at, downloaded into a hidden file beside its place, synced, hashed as it streamed and checked
/// against the digest recorded at removal, given its modification time, and only then linked
/// into place (link(2): a file that appeared at the path meanwhile is never replaced). A photo's
/// companions come back with it. Each file is recorded `restored` once it is in place.
///
/// Killed at any point, a file is still in the trash, at the destination, or in place: a rerun
/// finds one in place with the recorded digest and records it restored; a half download is a
/// hidden file the rerun writes over.
public enum PhotoRestore {
    /// Where a file comes back from.
    public enum Source: String, Sendable, Codable {
        /// It is in the trash: renamed back.
        case trash
        /// The trash no longer holds it (emptied, or `--delete`): downloaded.
        case destination
        /// A file with its digest is already at its path (a restore killed before recording it).
        case inPlace = "in-place"
    }

    /// One file to bring back, and from where.
    public struct Item: Sendable {
        public var removal: AssetStore.Removal
        public var source: Source
    }

    /// What `plan` found: the files to bring back, and those that cannot come back, with why.
    public struct Plan: Sendable {
        public var items: [Item] = []
        public var blocked: [(removal: AssetStore.Removal, reason: String)] = []
    }

    /// The removals `paths` name (relative to the library: a file, its photo, or a folder above
    /// them; every one when empty), newest first for a path removed more than once, each with
    /// its photo's companions. Restored removals are never chosen again.
    public static func select(_ removals: [AssetStore.Removal], paths: [String]) -> [AssetStore.Removal] {
        let open = removals.filter { [.trashed, .deleted, .purged].contains($0.state) }
        func named(_ path: String) -> Bool {
            paths.isEmpty || paths.contains { path == $0 || path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }
        }
        let photos = Set(open.filter { named($0.path) || named($0.photo) }.map(\.photo))
        var seen: Set<String> = []
        var chosen: [AssetStore.Removal] = []
        for removal in open.sorted(by: { $0.id > $1.id }) where photos.contains(removal.photo) {
            guard seen.insert(removal.path).inserted else { continue }
            chosen.append(removal)
        }
        // A photo before its companions, groups in the order they were removed.
        return chosen.sorted { ($0.photo, $0.path == $0.photo ? 0 : 1, $0.id) < ($1.photo, $1.path == $1.photo ? 0 : 1, $1.id) }
    }

    /// Where each of `removals` comes back from, looking at the disk now; nothing is changed.
    public static func plan(_ removals: [AssetStore.Removal], store: AssetStore) -> Plan {
        var plan = Plan()
        for removal in removals {
            let original = store.absolutePath(of: removal.path)
            if Trash.exists(original) {
                if (try? SHA256.hex(path: original)) == removal.sha256 {
                    plan.items.append(Item(removal: removal, source: .inPlace))
                } else {
                    plan.blocked.append((removal, "another file is at \(removal.path): move it away first"))
                }
            } else if removal.state == .trashed, let file = removal.trashPath, Trash.exists(file) {
                plan.items.append(Item(removal: removal, source: .trash))
            } else {
                plan.items.append(Item(removal: removal, source: .destination))
            }
        }
        return plan
    }

    /// What happened to one file.
    public struct Done: Sendable {
        public var removal: AssetStore.Removal
        /// Where it came back from; nil when it did not.
        public var source: Source?
        /// Why it did not come back.
        public var failure: String?
    }

    /// What `run` did.
    public struct Outcome: Sendable {
        public var done: [Done] = []
        /// The destination's failure that stopped the downloads (the rest stay where they are).
        public var stopped: TransferError?
        public var restoredBytes: Int64 {
            done.filter { $0.source != nil }.reduce(0) { $0 + $1.removal.size }
        }
    }

    /// Brings back the plan's files. `destinations` holds a destination for each store key a
    /// download needs. Throws the store's error (the file being restored is then in place or
    /// where it was, which a rerun settles).
    public static func run(_ items: [Item], store: AssetStore,
                           destinations: [String: any UploadDestination]) async throws(StoreError) -> Outcome {
        var outcome = Outcome()
        for item in items {
            let removal = item.removal
            let original = store.absolutePath(of: removal.path)
            var source = item.source
            if source == .trash {
                switch fromTrash(removal, to: original) {
                case .success: break
                case .failure(let why):
                    if Trash.exists(original) {
                        outcome.done.append(Done(removal: removal, failure: why.reason))
                        continue
                    }
                    source = .destination
                }
            }
            if source == .destination {
                guard outcome.stopped == nil else {
                    outcome.done.append(Done(removal: removal, failure: "not tried: the destination stopped answering"))
                    continue
                }
                guard let destination = destinations[removal.destination] else {
                    outcome.done.append(Done(removal: removal, failure: "no destination to download it from (\(removal.destination))"))
                    continue
                }
                do throws(TransferError) {
                    if let why = try await fromDestination(removal, to: original, destination: destination) {
                        outcome.done.append(Done(removal: removal, failure: why))
                        continue
                    }
                } catch {
                    if error.code == .invalidRequest {
                        outcome.done.append(Done(removal: removal, failure: error.message))
                    } else {
                        outcome.stopped = error
                        outcome.done.append(Done(removal: removal, failure: "\(error.code.rawValue): \(error.message)"))
                    }
                    continue
                }
            }
            if let file = removal.trashPath, source != .trash, Trash.exists(file), (try? SHA256.hex(path: file)) == removal.sha256 {
                // In place with its bytes already: the trash's copy is one too many.
                Trash.remove(file)
            }
            if let info = removal.infoPath, removal.trashPath.map({ !Trash.exists($0) }) ?? true { Trash.remove(info) }
            try store.recordRemovalState(removal.id, .restored)
            outcome.done.append(Done(removal: removal, source: source))
        }
        return outcome
    }

    struct Failure: Error {
        let reason: String
    }

    /// Renames the file back from the trash once its bytes are checked to be the ones removed.
    static func fromTrash(_ removal: AssetStore.Removal, to original: String) -> Result<Void, Failure> {
        guard let file = removal.trashPath, (try? SHA256.hex(path: file)) == removal.sha256 else {
            return .failure(Failure(reason: "its copy in the trash is not the photo's bytes"))
        }
        try? FileManager.default.createDirectory(atPath: (original as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        switch Trash.move(file, to: original) {
        case .moved: return .success(())
        case .otherFilesystem: return .failure(Failure(reason: "the trash is on another filesystem than \(removal.path)"))
        case .failed(let why): return .failure(Failure(reason: why))
        }
    }

    /// Downloads the file from `destination` beside its place, checks it, and links it there;
    /// nil when it is in place, else why not. Throws the destination's failure.
    static func fromDestination(_ removal: AssetStore.Removal, to original: String,
                                destination: any UploadDestination) async throws(TransferError) -> String? {
        let folder = (original as NSString).deletingLastPathComponent
        let name = (original as NSString).lastPathComponent
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let temporary = folder + "/.photodrain-restore-" + name
        let copy: StoredCopy
        do throws(TransferError) {
            copy = try await UploadDestinations.download(from: destination, sha256Hex: removal.sha256, size: removal.size,
                                                         filename: name, serverID: removal.serverID, to: temporary)
        } catch {
            Trash.remove(temporary)
            throw error
        }
        switch copy {
        case .present:
            break
        case .missing:
            Trash.remove(temporary)
            return "the destination no longer holds it"
        case .mismatched(let why):
            Trash.remove(temporary)
            return "the destination's copy is not the photo's bytes: \(why)"
        }
        guard Trash.setModificationTime(temporary, nanoseconds: removal.mtimeNanoseconds) else {
            Trash.remove(temporary)
            return "its modification time could not be set"
        }
        switch Trash.place(temporary, at: original) {
        case .moved:
            return nil
        case .otherFilesystem, .failed:
            let why = Trash.exists(original) ? "another file appeared at \(removal.path)" : "it could not be put at \(removal.path)"
            Trash.remove(temporary)
            return why
        }
    }
}
