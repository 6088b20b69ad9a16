import Foundation
import UploadProtocol

/// Where `photodrain upload` keeps the checkpoints of its unfinished uploads, so a run killed
/// part-way (or cut off from its receiver) resumes from the server's offset in the next run
/// instead of opening a new upload and sending every byte again.
///
/// One small JSON file (`UploadResumeRecord`, mode 0600) per file and destination, in a folder of
/// mode 0700: by default `$XDG_STATE_HOME/photodrain/uploads/`, else
/// `~/.local/state/photodrain/uploads/`. A record is named after the destination, the interop
/// version and the file's device and inode, and is rewritten (a temporary file renamed over it) at
/// every checkpoint. It is not fsynced: a record lost in a machine crash only means starting over,
/// and the server's offset, not the record's, is what a resume trusts. A record older than
/// `maximumAge` is removed unread, as is one that cannot be decoded.
///
/// Not thread-safe: one run uses it from one task, file after file.
public final class UploadResumeStore {
    /// How long a record is worth keeping: a receiver drops abandoned partial uploads well before
    /// (`photodrain serve --partial-ttl` is a day by default).
    public static let defaultMaximumAge: TimeInterval = 7 * 24 * 3600

    /// Where a record is kept and what it is keyed by besides the file.
    public struct Destination: Sendable, Equatable {
        /// The destination without user info, query or fragment (which may hold secrets); for S3
        /// the bucket and prefix and the endpoint.
        public var name: String
        /// The interop version new uploads are created with (0 for S3).
        public var interopVersion: Int
        /// The destination URL's `user[:password]`, never written: put back into a restored
        /// upload URL on the same origin, which the saved one was made from.
        var userInfo: String?
        /// The destination's `scheme://host[:port]`, for `userInfo`.
        var origin: String?

        /// A destination named explicitly (tests).
        public init(name: String, interopVersion: Int) {
            self.name = name
            self.interopVersion = interopVersion
        }

        /// The destination `uploader` sends to.
        public init(_ uploader: any UploadDestination) {
            if let resumable = uploader as? ResumableUploader {
                self.init(name: UploadEndpoint.loggable(resumable.configuration.endpoint),
                          interopVersion: resumable.configuration.interopVersion)
                userInfo = UploadResumeStore.userInfo(of: resumable.configuration.endpoint)
                origin = UploadEndpoint.origin(of: resumable.configuration.endpoint)
            } else if let s3 = uploader as? S3Uploader {
                self.init(name: "\(s3.configuration.destination) at \(UploadEndpoint.loggable(s3.configuration.endpoint))",
                          interopVersion: 0)
            } else {
                self.init(name: UploadEndpoint.loggable(uploader.endpoint), interopVersion: 0)
            }
        }
    }

    /// What the store holds for one file.
    public struct Lookup: Sendable, Equatable {
        /// The unfinished upload of this very version of the file, to resume.
        public var resumable: UploadResumeRecord?
        /// Records for this destination that must not be resumed: the same file in another version
        /// (changed since), or another file now at the same path (replaced). Cancel their uploads
        /// on the server, then `remove` them.
        public var stale: [UploadResumeRecord] = []
    }

    /// The folder holding the records.
    public let directory: String
    /// Records saved longer ago than this are removed unread.
    public let maximumAge: TimeInterval
    /// Every live record, by file name: read once when the store opens, kept in step with writes.
    private var records: [String: UploadResumeRecord] = [:]

    /// `$XDG_STATE_HOME/photodrain/uploads` when `XDG_STATE_HOME` is absolute, else
    /// `$HOME/.local/state/photodrain/uploads`; nil when neither is set, or when `HOME` is no
    /// folder (`HOME=/nonexistent` says there is no home, and none should be made).
    public static func defaultDirectory(environment: [String: String]) -> String? {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/photodrain/uploads" }
        var isFolder: ObjCBool = false
        if let home = environment["HOME"], !home.isEmpty,
           FileManager.default.fileExists(atPath: home, isDirectory: &isFolder), isFolder.boolValue {
            return home + "/.local/state/photodrain/uploads"
        }
        return nil
    }

    /// Opens the store at `directory`, creating it (mode 0700) when missing, and removes what is no
    /// use: records older than `maximumAge` at `now`, records that cannot be decoded, and temporary
    /// files left by a run killed while writing. Throws `checkpoint-failed` when the folder cannot
    /// be created or listed.
    public init(directory: String, maximumAge: TimeInterval = UploadResumeStore.defaultMaximumAge, now: Date = Date()) throws(TransferError) {
        self.directory = directory
        self.maximumAge = maximumAge
        let files = FileManager.default
        do {
            try files.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                      attributes: [.posixPermissions: 0o700])
        } catch {
            throw TransferError(.checkpointFailed, "cannot create \(directory) to keep upload checkpoints in")
        }
        let names: [String]
        do {
            names = try files.contentsOfDirectory(atPath: directory)
        } catch {
            throw TransferError(.checkpointFailed, "cannot read \(directory), where upload checkpoints are kept")
        }
        for name in names {
            let path = directory + "/" + name
            if name.hasPrefix(".") && name.hasSuffix(".tmp") {
                // A temporary file is renamed within moments; one an hour old was left by a kill.
                let modified = (try? files.attributesOfItem(atPath: path)[.modificationDate]) as? Date
                if let modified, now.timeIntervalSince(modified) > 3600 { try? files.removeItem(atPath: path) }
                continue
            }
            guard name.hasSuffix(".json") else { continue }
            guard let data = files.contents(atPath: path),
                  let record = try? JSONDecoder().decode(UploadResumeRecord.self, from: data) else {
                try? files.removeItem(atPath: path)
                continue
            }
            guard record.format == UploadResumeRecord.currentFormat else { continue }  // a newer PhotoDrain's
            guard !record.isExpired(maximumAge: maximumAge, now: now), Self.fileName(for: record) == name else {
                try? files.removeItem(atPath: path)
                continue
            }
            records[name] = record
        }
    }

    /// What the store holds for `file` at `destination`: the record to resume when it names this
    /// version of the file and has not expired, and the stale ones to cancel and remove.
    public func lookup(_ file: FileIdentity, at destination: Destination, now: Date = Date()) -> Lookup {
        var found = Lookup()
        let name = Self.fileName(destination: destination.name, interopVersion: destination.interopVersion, file: file)
        if let record = records[name] {
            if record.isExpired(maximumAge: maximumAge, now: now) {
                remove(record)
            } else if record.file.isSameVersion(as: file) {
                found.resumable = record
            } else {
                found.stale.append(record)
            }
        }
        // A file replaced by another (an editor's save renames a new file over the old) has a new
        // inode: its old record is found by path.
        found.stale += records.values.filter {
            $0.destination == destination.name && $0.interopVersion == destination.interopVersion
                && $0.file.path == file.path && !$0.file.isSameFile(as: file)
        }.sorted { $0.savedAt < $1.savedAt }
        return found
    }

    /// The checkpoint text to resume `record` with: its `UploadCheckpoint.storedForm`, with the
    /// destination's user info put back into an upload URL on the destination's origin.
    public func storedForm(of record: UploadResumeRecord, at destination: Destination) -> String {
        guard let userInfo = destination.userInfo, !record.checkpoint.hasPrefix("{"),
              let origin = destination.origin, UploadEndpoint.origin(of: record.checkpoint) == origin,
              let schemeEnd = record.checkpoint.range(of: "://") else { return record.checkpoint }
        return String(record.checkpoint[..<schemeEnd.upperBound]) + userInfo + "@" + record.checkpoint[schemeEnd.upperBound...]
    }

    /// Saves `checkpoint` as the record of `file` at `destination`, replacing the previous one
    /// atomically. Throws `checkpoint-failed` when it cannot be written.
    public func save(_ checkpoint: UploadCheckpoint, for file: FileIdentity, at destination: Destination,
                     now: Date = Date()) throws(TransferError) {
        let record = UploadResumeRecord(file: file, destination: destination.name, interopVersion: destination.interopVersion,
                                        checkpoint: Self.withoutUserInfo(checkpoint.storedForm), confirmedOffset: checkpoint.offset,
                                        savedAt: now)
        let name = Self.fileName(for: record)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(record) else {
            throw TransferError(.checkpointFailed, "the upload checkpoint could not be encoded")
        }
        let target = directory + "/" + name
        let temporary = directory + "/." + name + ".\(ProcessInfo.processInfo.processIdentifier).tmp"
        guard writeWholeFile(temporary, bytes: Array(data), mode: 0o600), renameFile(temporary, to: target) else {
            try? FileManager.default.removeItem(atPath: temporary)
            throw TransferError(.checkpointFailed, "cannot write the upload checkpoint in \(directory)")
        }
        records[name] = record
    }

    /// Removes `record`'s file; one already gone is fine.
    public func remove(_ record: UploadResumeRecord) {
        let name = Self.fileName(for: record)
        records[name] = nil
        try? FileManager.default.removeItem(atPath: directory + "/" + name)
    }

    /// Removes the record of `file` at `destination`, if there is one (the upload completed).
    public func removeRecord(of file: FileIdentity, at destination: Destination) {
        let name = Self.fileName(destination: destination.name, interopVersion: destination.interopVersion, file: file)
        records[name] = nil
        try? FileManager.default.removeItem(atPath: directory + "/" + name)
    }

    // MARK: Naming

    private static func fileName(for record: UploadResumeRecord) -> String {
        fileName(destination: record.destination, interopVersion: record.interopVersion, file: record.file)
    }

    /// 32 hex digits of the SHA-256 of what keys a record, then `.json`: the destination, the
    /// interop version and the file's device and inode (not its version: a changed file must find
    /// its old record to cancel it).
    private static func fileName(destination: String, interopVersion: Int, file: FileIdentity) -> String {
        let key = "photodrain-upload\n\(destination)\n\(interopVersion)\n\(file.device)\n\(file.inode)"
        let digest = (try? FileDigest.sha256(bytes: Array(key.utf8))) ?? []
        return Hex.string(Array(digest.prefix(16))) + ".json"
    }

    // MARK: User info

    /// `user[:password]` of an absolute URL, or nil.
    static func userInfo(of url: String) -> String? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return nil }
        return String(authority[..<at])
    }

    /// `text` with the user info taken out when it is an absolute URL that has some.
    static func withoutUserInfo(_ text: String) -> String {
        guard let user = userInfo(of: text), let schemeEnd = text.range(of: "://") else { return text }
        let rest = text[schemeEnd.upperBound...].dropFirst(user.count + 1)
        return String(text[..<schemeEnd.upperBound]) + rest
    }
}
