import AssetStore
import Foundation
import SystemSupport

/// Takes the groups `FreeSpacePlan` found safe off the device, in an order a SIGKILL at any
/// point cannot turn into a loss (issue 33).
///
/// Into a trash, per group (a photo and its companions): for each file, the file must still be
/// its row's version (size, time, stamp); a name is claimed in the trash (its `.trashinfo`
/// created with `O_EXCL` and synced); the intent is committed to the store (`trashing`, with the
/// trash path); the file is renamed there (rename(2) only: EXDEV tries the next trash); the file
/// now in the trash is hashed again and must be the digest the destination vouched for. Once
/// every file of the group is in the trash, each is recorded `trashed` (its row and marks
/// dropped). A file that fails undoes the group: the files already moved are renamed back and
/// their intents dropped, so a pair goes together or not at all.
///
/// With `--delete`, per group: every file is hashed again and its intent (`deleting`) committed,
/// then every file is unlinked and recorded `deleted`: each was proven at the destination just
/// before.
///
/// Killed at any point, every file is in place, in the trash, or (after `--delete`) proven at
/// the destination; `recover` (run first by every `free-space` and `restore`) settles the
/// intents from what is on disk: a file in the trash and not in place was moved (finished), one
/// still in place was not (undone); a file whose `deleting` intent finds it gone was deleted.
public enum FreeSpaceRemoval {
    /// Where removed files go.
    public enum Mode: Sendable, Equatable {
        case trash
        case delete
    }

    /// What a removal run did.
    public struct Outcome: Sendable {
        /// Groups removed, with each file's record.
        public var removed: [(group: FreeSpacePlan.Group, records: [AssetStore.Removal])] = []
        /// Groups left in place, with why.
        public var failed: [(group: FreeSpacePlan.Group, reason: String)] = []
        /// The bytes the removed groups took.
        public var freedBytes: Int64 { removed.reduce(0) { $0 + $1.group.bytes } }
    }

    /// Removes `groups` (each found safe by `FreeSpaceCheck` moments ago) from the library
    /// `store` describes. `records` and `serverIDs` are the check's, by path; `destination` the
    /// store's key for the destination, `proof` what the proof was (`verified`, `verified-deep`).
    /// Throws the store's error at once: the group being removed is then in place or in the
    /// trash with its intent recorded, which the next run's `recover` settles.
    public static func remove(_ groups: [FreeSpacePlan.Group], records: [String: AssetRecord], serverIDs: [String: String],
                              store: AssetStore, destination: String, proof: String, mode: Mode,
                              trashes: [Trash], now: Date = Date()) throws(StoreError) -> Outcome {
        var outcome = Outcome()
        for group in groups {
            let result: Result<[AssetStore.Removal], GroupFailure>
            switch mode {
            case .trash: result = try trash(group, records: records, serverIDs: serverIDs, store: store, destination: destination,
                                            proof: proof, trashes: trashes, now: now)
            case .delete: result = try delete(group, records: records, serverIDs: serverIDs, store: store, destination: destination,
                                              proof: proof, now: now)
            }
            switch result {
            case .success(let removals): outcome.removed.append((group, removals))
            case .failure(let failure): outcome.failed.append((group, failure.reason))
            }
        }
        return outcome
    }

    /// Why a group stayed.
    struct GroupFailure: Error {
        let reason: String
    }

    /// The intent for one file, before it moves.
    static func intent(_ file: FreeSpacePlan.FileFacts, row: AssetRecord, group: FreeSpacePlan.Group, serverIDs: [String: String],
                       destination: String, proof: String, state: AssetStore.Removal.State, slot: Trash.Slot?, now: Date) -> AssetStore.Removal {
        AssetStore.Removal(path: row.path, rawPath: row.rawPath, photo: group.photo.path, sha256: file.digest ?? row.sha256 ?? "",
                           size: Int64(row.size), mtimeNanoseconds: row.mtimeNanoseconds, destination: destination,
                           serverID: serverIDs[row.path], proof: proof, state: state, trashPath: slot?.file, infoPath: slot?.info,
                           startedAt: now.timeIntervalSince1970)
    }

    /// The checks every file passes right before it moves: a row, a UTF-8 name, a digest, and
    /// the file still its row's version.
    static func ready(_ file: FreeSpacePlan.FileFacts, records: [String: AssetRecord], store: AssetStore) -> Result<AssetRecord, GroupFailure> {
        guard let row = records[file.path] else { return .failure(GroupFailure(reason: "\(file.path) has no row in the store")) }
        guard row.rawPath == nil else { return .failure(GroupFailure(reason: "\(file.path): a name that is not UTF-8 is not removed")) }
        guard file.digest != nil else { return .failure(GroupFailure(reason: "\(file.path) was not hashed")) }
        guard store.fileMatches(row) else { return .failure(GroupFailure(reason: "\(file.path) changed since it was checked")) }
        return .success(row)
    }

    private static func trash(_ group: FreeSpacePlan.Group, records: [String: AssetRecord], serverIDs: [String: String],
                              store: AssetStore, destination: String, proof: String, trashes: [Trash],
                              now: Date) throws(StoreError) -> Result<[AssetStore.Removal], GroupFailure> {
        var moved: [(id: Int64, original: String, slot: Trash.Slot, removal: AssetStore.Removal)] = []
        func undo() throws(StoreError) {
            for entry in moved.reversed() {
                if case .moved = Trash.move(entry.slot.file, to: entry.original) {
                    Trash.remove(entry.slot.info)
                    try store.abandonRemoval(entry.id)
                }
                // Not moved back (the original's place was taken meanwhile): it stays in the
                // trash with its intent, which `recover` finishes as a removal.
            }
        }
        for file in group.files {
            let row: AssetRecord
            switch ready(file, records: records, store: store) {
            case .success(let found): row = found
            case .failure(let failure):
                try undo()
                return .failure(failure)
            }
            let original = store.absolutePath(of: row.path)
            var placed: (id: Int64, slot: Trash.Slot, removal: AssetStore.Removal)?
            var why = "no trash on its filesystem could take it"
            for trash in trashes {
                guard let slot = trash.claim(for: original, date: now) else { continue }
                let removal = intent(file, row: row, group: group, serverIDs: serverIDs, destination: destination, proof: proof,
                                     state: .trashing, slot: slot, now: now)
                let id: Int64
                do throws(StoreError) {
                    id = try store.recordRemovalIntent(removal)
                } catch {
                    Trash.remove(slot.info)
                    try undo()
                    throw error
                }
                switch Trash.move(original, to: slot.file) {
                case .moved:
                    placed = (id, slot, removal)
                case .otherFilesystem:
                    Trash.remove(slot.info)
                    try store.abandonRemoval(id)
                    continue
                case .failed(let message):
                    Trash.remove(slot.info)
                    try store.abandonRemoval(id)
                    why = message
                    continue
                }
                break
            }
            guard let placed else {
                try undo()
                return .failure(GroupFailure(reason: "\(file.path): \(why)"))
            }
            moved.append((placed.id, original, placed.slot, placed.removal))
            // The bytes now in the trash, where nobody edits them, must be the ones the
            // destination vouched for: an edit made since the check is caught here.
            guard (try? SHA256.hex(path: placed.slot.file)) == file.digest else {
                try undo()
                return .failure(GroupFailure(reason: "\(file.path) changed while it was being removed"))
            }
        }
        var removals: [AssetStore.Removal] = []
        for entry in moved {
            try store.recordRemovalDone(entry.id)
            var removal = entry.removal
            removal.id = entry.id
            removal.state = .trashed
            removals.append(removal)
        }
        return .success(removals)
    }

    private static func delete(_ group: FreeSpacePlan.Group, records: [String: AssetRecord], serverIDs: [String: String],
                               store: AssetStore, destination: String, proof: String,
                               now: Date) throws(StoreError) -> Result<[AssetStore.Removal], GroupFailure> {
        var intents: [(id: Int64, path: String, removal: AssetStore.Removal)] = []
        func undo() throws(StoreError) {
            for entry in intents { try store.abandonRemoval(entry.id) }
        }
        for file in group.files {
            let row: AssetRecord
            switch ready(file, records: records, store: store) {
            case .success(let found): row = found
            case .failure(let failure):
                try undo()
                return .failure(failure)
            }
            let path = store.absolutePath(of: row.path)
            guard (try? SHA256.hex(path: path)) == file.digest else {
                try undo()
                return .failure(GroupFailure(reason: "\(file.path) changed since it was checked"))
            }
            let removal = intent(file, row: row, group: group, serverIDs: serverIDs, destination: destination, proof: proof,
                                 state: .deleting, slot: nil, now: now)
            intents.append((try store.recordRemovalIntent(removal), path, removal))
        }
        var removals: [AssetStore.Removal] = []
        for entry in intents {
            guard Trash.remove(entry.path) else {
                // The files before it are gone (each proven at the destination); this one and the
                // rest stay, their intents dropped.
                for rest in intents.drop(while: { $0.id != entry.id }) { try store.abandonRemoval(rest.id) }
                return removals.isEmpty ? .failure(GroupFailure(reason: "\(entry.removal.path) could not be deleted")) : .success(removals)
            }
            Trash.syncFolder(of: entry.path)
            try store.recordRemovalDone(entry.id)
            var removal = entry.removal
            removal.id = entry.id
            removal.state = .deleted
            removals.append(removal)
        }
        return .success(removals)
    }

    /// What `recover` did.
    public struct Recovery: Sendable, Equatable {
        /// Intents found done on disk and recorded so.
        public var finished = 0
        /// Intents whose file never left, dropped.
        public var undone = 0

        public init(finished: Int = 0, undone: Int = 0) {
            self.finished = finished
            self.undone = undone
        }
    }

    /// Settles the intents a killed run left (see the type's comment): run before anything else
    /// touches the library's removals.
    public static func recover(store: AssetStore) throws(StoreError) -> Recovery {
        var recovery = Recovery()
        for removal in try store.removals(in: [.trashing, .deleting]) {
            let original = store.absolutePath(of: removal.path)
            let inPlace = Trash.exists(original)
            switch removal.state {
            case .trashing:
                if let file = removal.trashPath, Trash.exists(file), !inPlace,
                   (try? SHA256.hex(path: file)) == removal.sha256 {
                    try store.recordRemovalDone(removal.id)
                    recovery.finished += 1
                } else {
                    if let file = removal.trashPath, Trash.exists(file), !inPlace {
                        // In the trash with other bytes than were proven: put back, not removed.
                        _ = Trash.move(file, to: original)
                    }
                    if let info = removal.infoPath, let file = removal.trashPath, !Trash.exists(file) { Trash.remove(info) }
                    try store.abandonRemoval(removal.id)
                    recovery.undone += 1
                }
            case .deleting:
                if inPlace {
                    try store.abandonRemoval(removal.id)
                    recovery.undone += 1
                } else {
                    try store.recordRemovalDone(removal.id)
                    recovery.finished += 1
                }
            default:
                break
            }
        }
        return recovery
    }

    /// Empties the trash of the library's removals moved there before `before` (seconds since
    /// the epoch; every one with nil): each file is unlinked, then its `.trashinfo`, then it is
    /// recorded `purged` (killed in between, the next run finds the file gone and records it).
    /// A trashed file already gone (emptied from a file manager) is recorded purged too.
    /// Returns how many and their bytes.
    public static func purge(store: AssetStore, before: Double?) throws(StoreError) -> (count: Int, bytes: Int64) {
        var count = 0
        var bytes: Int64 = 0
        for removal in try store.removals(in: [.trashed]) {
            let due = before.map { (removal.removedAt ?? removal.startedAt) < $0 } ?? true
            let gone = removal.trashPath.map { !Trash.exists($0) } ?? true
            guard due || gone else { continue }
            if gone, (try? SHA256.hex(path: store.absolutePath(of: removal.path))) == removal.sha256 {
                // Renamed back by a restore killed before it recorded so: restored, not purged.
                if let info = removal.infoPath { Trash.remove(info) }
                try store.recordRemovalState(removal.id, .restored)
                continue
            }
            if let file = removal.trashPath, !Trash.remove(file) { continue }
            if let info = removal.infoPath { Trash.remove(info) }
            try store.recordRemovalState(removal.id, .purged)
            count += 1
            bytes += removal.size
        }
        return (count, bytes)
    }
}
