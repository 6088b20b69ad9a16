import Foundation
import Testing
@testable import Transfer

/// `UploadResumeStore`: the checkpoints `photodrain upload` keeps between runs. Each test gets a
/// fresh state folder.
@Suite struct UploadResumeStoreTests {
    let directory: String
    let destination = UploadResumeStore.Destination(name: "http://127.0.0.1:8080/uploads", interopVersion: 6)
    let file = FileIdentity(path: "/photos/IMG_0001.jpg", device: 2049, inode: 131, size: 400_000_000,
                            modifiedNanoseconds: 1_700_000_000_123_456_789)
    let checkpoint = UploadCheckpoint(location: "http://127.0.0.1:8080/uploads/abc", offset: 98_000_000, interopVersion: 6)

    init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("photodrain-resume-\(UUID().uuidString)").path
    }

    private func records() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }
    }

    @Test func aSavedCheckpointIsFoundByTheNextRun() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try UploadResumeStore(directory: directory).save(checkpoint, for: file, at: destination)
        let next = try UploadResumeStore(directory: directory)
        let found = next.lookup(file, at: destination)
        #expect(found.stale.isEmpty)
        let record = try #require(found.resumable)
        #expect(record.confirmedOffset == 98_000_000)
        #expect(record.file == file)
        let restored = UploadCheckpoint(storedForm: next.storedForm(of: record, at: destination),
                                        confirmedOffset: record.confirmedOffset, interopVersion: record.interopVersion)
        #expect(restored == checkpoint)
        // Owner-only: an upload URL lets whoever holds it append to the upload.
        let mode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    @Test func aLaterCheckpointReplacesTheEarlierOne() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try UploadResumeStore(directory: directory)
        try store.save(checkpoint, for: file, at: destination)
        var later = checkpoint
        later.offset = 200_000_000
        try store.save(later, for: file, at: destination)
        #expect(records().count == 1)
        #expect(try UploadResumeStore(directory: directory).lookup(file, at: destination).resumable?.confirmedOffset == 200_000_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { !$0.hasSuffix(".tmp") })
    }

    @Test func aFinishedUploadLeavesNoRecord() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try UploadResumeStore(directory: directory)
        try store.save(checkpoint, for: file, at: destination)
        store.removeRecord(of: file, at: destination)
        #expect(records().isEmpty)
        #expect(try UploadResumeStore(directory: directory).lookup(file, at: destination) == UploadResumeStore.Lookup())
    }

    /// A record older than the maximum age is removed when the store opens, and ignored (and
    /// removed) when a long run looks it up after it expired.
    @Test func anExpiredRecordIsRemoved() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let eightDaysAgo = Date().addingTimeInterval(-8 * 24 * 3600)
        try UploadResumeStore(directory: directory).save(checkpoint, for: file, at: destination, now: eightDaysAgo)
        #expect(records().count == 1)
        let store = try UploadResumeStore(directory: directory)
        #expect(records().isEmpty)
        #expect(store.lookup(file, at: destination).resumable == nil)

        try store.save(checkpoint, for: file, at: destination)
        let found = store.lookup(file, at: destination, now: Date().addingTimeInterval(8 * 24 * 3600))
        #expect(found.resumable == nil && found.stale.isEmpty)
        #expect(records().isEmpty)
    }

    /// The file is another version (changed in place) or another file at the same path (an editor
    /// renamed a new one over it): the saved upload is stale, never resumed.
    @Test(arguments: [
        ("modified", 0, 0, 1),
        ("grew", 0, 4096, 0),
        ("replaced", 1, 0, 0),
    ])
    func aChangedFileMakesTheRecordStale(change: String, inodeDelta: UInt64, sizeDelta: Int64, mtimeDelta: Int64) throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try UploadResumeStore(directory: directory).save(checkpoint, for: file, at: destination)
        var changed = file
        changed.inode += inodeDelta
        changed.size += sizeDelta
        changed.modifiedNanoseconds += mtimeDelta
        let store = try UploadResumeStore(directory: directory)
        let found = store.lookup(changed, at: destination)
        #expect(found.resumable == nil, "\(change)")
        #expect(found.stale.map(\.file) == [file], "\(change)")
        found.stale.forEach(store.remove)
        #expect(records().isEmpty)
    }

    /// A file moved within its file system is the same file: its upload resumes.
    @Test func aMovedFileStillResumes() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try UploadResumeStore(directory: directory).save(checkpoint, for: file, at: destination)
        var moved = file
        moved.path = "/photos/2024/IMG_0001.jpg"
        let found = try UploadResumeStore(directory: directory).lookup(moved, at: destination)
        #expect(found.resumable?.confirmedOffset == checkpoint.offset)
        #expect(found.stale.isEmpty)
    }

    @Test(arguments: [
        UploadResumeStore.Destination(name: "http://127.0.0.1:9090/uploads", interopVersion: 6),
        UploadResumeStore.Destination(name: "http://127.0.0.1:8080/uploads", interopVersion: 8),
    ])
    func anotherDestinationDoesNotSeeTheRecord(other: UploadResumeStore.Destination) throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try UploadResumeStore(directory: directory).save(checkpoint, for: file, at: destination)
        #expect(try UploadResumeStore(directory: directory).lookup(file, at: other) == UploadResumeStore.Lookup())
        #expect(records().count == 1)
    }

    /// Credentials in the destination URL reach the saved upload URL when libcurl resolves it;
    /// they are taken out before writing and put back when resuming.
    @Test func userInfoIsNeverWritten() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let uploader = ResumableUploader(configuration: UploadConfiguration(endpoint: "http://photos:s3cret@127.0.0.1:8080/uploads?key=k"))
        let destination = UploadResumeStore.Destination(uploader)
        #expect(destination.name == "http://127.0.0.1:8080/uploads")
        let store = try UploadResumeStore(directory: directory)
        let saved = UploadCheckpoint(location: "http://photos:s3cret@127.0.0.1:8080/uploads/abc", offset: 5, interopVersion: 6)
        try store.save(saved, for: file, at: destination)
        let text = try String(contentsOfFile: directory + "/" + records()[0], encoding: .utf8)
        #expect(!text.contains("s3cret") && !text.contains("key=k"))
        let record = try #require(try UploadResumeStore(directory: directory).lookup(file, at: destination).resumable)
        #expect(store.storedForm(of: record, at: destination) == saved.location)
    }

    @Test func anS3MultipartCheckpointRoundTrips() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let s3 = UploadResumeStore.Destination(name: "s3://photos/library at http://127.0.0.1:9000", interopVersion: 0)
        let multipart = UploadCheckpoint(location: "s3://photos/library/ab-IMG.jpg", offset: 16 << 20, interopVersion: 0,
                                         uploadID: "upload-1", partSize: 8 << 20,
                                         parts: [S3Part(number: 1, etag: "\"e1\"", size: 8 << 20), S3Part(number: 2, etag: "\"e2\"", size: 8 << 20)])
        try UploadResumeStore(directory: directory).save(multipart, for: file, at: s3)
        let store = try UploadResumeStore(directory: directory)
        let record = try #require(store.lookup(file, at: s3).resumable)
        #expect(UploadCheckpoint(storedForm: store.storedForm(of: record, at: s3), confirmedOffset: record.confirmedOffset,
                                 interopVersion: 0) == multipart)
    }

    @Test func anUndecodableRecordIsRemoved() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try UploadResumeStore(directory: directory).save(checkpoint, for: file, at: destination)
        try Data("{\"format\":".utf8).write(to: URL(fileURLWithPath: directory + "/" + records()[0]))
        let store = try UploadResumeStore(directory: directory)
        #expect(store.lookup(file, at: destination).resumable == nil)
        #expect(records().isEmpty)
    }

    /// A state folder that cannot be made is a `checkpoint-failed` error for the caller to warn
    /// about, not a crash.
    @Test func anUnusableFolderThrows() throws {
        let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("photodrain-resume-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: blocker) }
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data()))
        #expect(throws: TransferError.self) { try UploadResumeStore(directory: blocker + "/uploads") }
    }

    @Test func identityOfARealFile() throws {
        let path = try TemporaryFile.make(bytes: TemporaryFile.pattern(count: 1000))
        defer { TemporaryFile.remove(path) }
        let first = try FileIdentity(examining: path)
        #expect(first.size == 1000 && first.path == path)
        #expect(try FileIdentity(examining: path).isSameVersion(as: first))
        try Data(TemporaryFile.pattern(count: 1001, seed: 2)).write(to: URL(fileURLWithPath: path))
        let rewritten = try FileIdentity(examining: path)
        #expect(!rewritten.isSameVersion(as: first))
        #expect(throws: TransferError.self) { try FileIdentity(examining: path + ".missing") }
    }
}

extension UploadResumeStoreTests {
    @Test(arguments: [
        (["XDG_STATE_HOME": "/var/state", "HOME": "/root"], "/var/state/photodrain/uploads"),
        (["XDG_STATE_HOME": "relative/state", "HOME": "/tmp"], "/tmp/.local/state/photodrain/uploads"),
        (["HOME": "/tmp"], "/tmp/.local/state/photodrain/uploads"),
        (["HOME": "/nonexistent-photodrain-home"], nil),
        ([:], nil),
    ] as [([String: String], String?)])
    func defaultDirectory(environment: [String: String], expected: String?) {
        #expect(UploadResumeStore.defaultDirectory(environment: environment) == expected)
    }
}
