import AssetStore
import Foundation
import SystemSupport
import Transfer

/// Gathers the facts `FreeSpacePlan` decides on (issue 33), at the moment of the run: each
/// file's proof at the destination from the store, its bytes hashed again now
/// (`SystemSupport.SHA256`), and the destination's answer now about those bytes
/// (`UploadDestinations.storedCopy`, with `deep` by downloading and hashing them). A photo's
/// companions are checked with it. Only the groups old enough to be considered are read or asked
/// about; a destination that cannot be reached or refuses stops the asking, and the run then
/// removes nothing (`stopped`).
public enum FreeSpaceCheck {
    /// What a check found.
    public struct Result: Sendable {
        /// The plan for the groups checked (or, when `stopped`, those checked before it).
        public var outcome: FreeSpacePlan.Outcome
        /// Groups kept by age alone (`--older-than`, `--keep-recent`), not checked.
        public var keptByAge: [(group: FreeSpacePlan.Group, reason: FreeSpacePlan.Reason)]
        /// Groups left unchecked because the destination stopped answering.
        public var unchecked: [FreeSpacePlan.Group]
        /// The destination's failure that ended the asking: nothing may be removed.
        public var stopped: TransferError?
        /// The store's rows for each file of the groups, by path (what a removal records).
        public var records: [String: AssetRecord]
        /// The server id each file's mark records, by path.
        public var serverIDs: [String: String]
    }

    /// Checks the library's photos the filter lets through (companions follow their photo,
    /// filtered or not) against `destination`, whose marks the store keeps under `identity`.
    /// `store` must be opened without a path filter, so every companion is seen. Throws the
    /// store's error: no removal follows one.
    public static func run(store: AssetStore, filter: PathFilter, destination: any UploadDestination, identity: String,
                           deep: Bool, selection: FreeSpacePlan.Selection, libraryLooksEmpty: Bool,
                           freeBytes: Int64, totalBytes: Int64, now: Double, parallel: Int = 4) async throws(StoreError) -> Result {
        let rows = try store.assets()
        var marks: [Int64: (serverID: String?, proof: String)] = [:]
        for entry in try store.uploadedAssets(to: identity) {
            marks[entry.asset.id] = (entry.serverID, entry.proof)
        }
        var records: [String: AssetRecord] = [:]
        var companions: [String: [AssetRecord]] = [:]
        for row in rows {
            records[row.path] = row
            if let photo = row.companionOf { companions[photo, default: []].append(row) }
        }
        let photos = rows.filter { $0.companionOf == nil && filter.matches($0.path) }
        func facts(_ row: AssetRecord) -> FreeSpacePlan.FileFacts {
            let proof: FreeSpacePlan.Proof
            switch marks[row.id]?.proof {
            case nil: proof = .none
            case "verified": proof = .verified
            case "unverified": proof = .unverified
            default: proof = .legacy
            }
            return FreeSpacePlan.FileFacts(path: row.path, size: Int64(row.size), proof: proof)
        }
        let groups = photos.map { photo in
            FreeSpacePlan.Group(photo: facts(photo), companions: (companions[photo.path] ?? []).map(facts), date: date(of: photo))
        }
        let consideration = FreeSpacePlan.consider(dates: groups.map(\.date), selection: selection, now: now)
        var checked: [FreeSpacePlan.Group] = []
        var unchecked: [FreeSpacePlan.Group] = []
        var stopped: TransferError?
        var index = 0
        let order = consideration.considered
        let rowsByPath = records, marksByID = marks
        while index < order.count {
            let batch = order[index..<min(index + parallel, order.count)].map { groups[$0] }
            index += batch.count
            if stopped != nil {
                unchecked += batch
                continue
            }
            let answers = await withTaskGroup(of: (Int, FreeSpacePlan.Group, TransferError?).self) { group in
                for (offset, candidate) in batch.enumerated() {
                    group.addTask {
                        var candidate = candidate
                        var failure: TransferError?
                        var files = candidate.files
                        for (position, file) in files.enumerated() {
                            guard let row = rowsByPath[file.path] else { continue }
                            do throws(TransferError) {
                                files[position] = try await check(file, row: row, store: store, destination: destination,
                                                                  serverID: marksByID[row.id]?.serverID ?? nil, deep: deep)
                            } catch {
                                failure = error
                                break
                            }
                            // The first file that is not safe keeps the group: the rest need no asking.
                            if FreeSpacePlan.reason(for: files[position]) != nil { break }
                        }
                        candidate.photo = files[0]
                        candidate.companions = Array(files.dropFirst())
                        return (offset, candidate, failure)
                    }
                }
                var answers: [(Int, FreeSpacePlan.Group, TransferError?)] = []
                for await answer in group { answers.append(answer) }
                return answers.sorted { $0.0 < $1.0 }
            }
            for (_, group, failure) in answers {
                if let failure, stopped == nil { stopped = failure }
                if failure != nil { unchecked.append(group) } else { checked.append(group) }
            }
        }
        let surroundings = FreeSpacePlan.Surroundings(libraryFiles: rows.count, libraryLooksEmpty: libraryLooksEmpty,
                                                      freeBytes: freeBytes, totalBytes: totalBytes)
        var outcome = FreeSpacePlan.decide(checked, selection: selection, surroundings: surroundings)
        if stopped != nil {
            // Nothing is removed after the destination failed: everything checked stays too.
            outcome.keep += outcome.remove.map { ($0, FreeSpacePlan.Reason.missingAtDestination) }
            outcome.remove = []
        }
        var serverIDs: [String: String] = [:]
        for row in rows { if let id = marks[row.id]?.serverID ?? nil { serverIDs[row.path] = id } }
        return Result(outcome: outcome, keptByAge: consideration.kept.map { (groups[$0.index], $0.reason) },
                      unchecked: unchecked, stopped: stopped, records: records, serverIDs: serverIDs)
    }

    /// One file's facts now: a file without a verified mark is neither read nor asked about; one
    /// whose size, time or stamp is not its row's, or whose bytes hash to another digest than
    /// analysis banked, is `changed`; otherwise the destination is asked for the bytes the file
    /// holds now. Throws the destination's failure (`invalid-request` is the file's own problem
    /// and keeps only it).
    static func check(_ file: FreeSpacePlan.FileFacts, row: AssetRecord, store: AssetStore, destination: any UploadDestination,
                      serverID: String?, deep: Bool) async throws(TransferError) -> FreeSpacePlan.FileFacts {
        var file = file
        guard file.proof == .verified else { return file }
        guard store.fileMatches(row) else {
            file.local = FileManager.default.fileExists(atPath: store.absolutePath(of: row)) ? .changed : .unreadable("the file is gone")
            return file
        }
        let path = store.absolutePath(of: row)
        let hashed = await onOwnThreadUntilDone("free-space hash") { () -> Swift.Result<String, SystemError> in
            do throws(SystemError) { return .success(try SHA256.hex(path: path)) } catch { return .failure(error) }
        }
        let now: String
        switch hashed {
        case .success(let digest): now = digest
        case .failure(let error):
            file.local = .unreadable(error.message)
            return file
        }
        if let banked = row.sha256, banked.lowercased() != now {
            file.local = .changed
            return file
        }
        file.local = .same
        file.digest = now
        do throws(TransferError) {
            let copy = try await UploadDestinations.storedCopy(at: destination, sha256Hex: now, size: file.size,
                                                               filename: (row.path as NSString).lastPathComponent,
                                                               serverID: serverID, deep: deep)
            switch copy {
            case .present: file.answer = .present
            case .missing: file.answer = .missing
            case .mismatched(let why): file.answer = .mismatched(why)
            }
        } catch where error.code == .invalidRequest {
            file.answer = .mismatched("it could not be checked: \(error.message)")
        }
        return file
    }

    /// A photo's date for `--older-than` and `--keep-recent`: its capture date (EXIF
    /// `DateTimeOriginal`, read as local time), else its modification time.
    static func date(of row: AssetRecord) -> Double {
        if let text = row.captureDate {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = .current
            formatter.dateFormat = "yyyy:MM:dd HH:mm:ss"
            if let date = formatter.date(from: String(text.prefix(19))) { return date.timeIntervalSince1970 }
        }
        return Double(row.mtimeNanoseconds) / 1e9
    }
}
