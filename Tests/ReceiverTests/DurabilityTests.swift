import Foundation
import Receiver
import Testing
import UploadProtocol

/// What a restart keeps of a partial upload whose last bytes were written but never fsync'd: all
/// of them when the machine did not reboot (the page cache survives a process), the last
/// checkpoint when it did, and all of them after a reboot with `--sync always`.
@Suite struct DurabilityTests {
    struct Scenario: Sendable, CustomTestStringConvertible {
        var syncMode: ReceiverConfiguration.SyncMode
        var checkpointInterval: Double
        var rebooted: Bool
        /// The offset the restarted receiver reports, of 300,000 bytes sent.
        var expectedOffset: Int
        var testDescription: String {
            "\(syncMode.rawValue), checkpoint every \(checkpointInterval) s, \(rebooted ? "after a reboot" : "same boot")"
        }
    }

    static let scenarios = [
        // A restart of the process alone: every written byte is still there, no fsync needed.
        Scenario(syncMode: .checkpoint, checkpointInterval: 3_600, rebooted: false, expectedOffset: 300_000),
        // A reboot: nothing was checkpointed (no cut transfer, the interval never passed).
        Scenario(syncMode: .checkpoint, checkpointInterval: 3_600, rebooted: true, expectedOffset: 0),
        // A zero interval checkpoints after every piece written.
        Scenario(syncMode: .checkpoint, checkpointInterval: 0, rebooted: true, expectedOffset: 300_000),
        // `always` made each reported offset durable before reporting it.
        Scenario(syncMode: .always, checkpointInterval: 3_600, rebooted: true, expectedOffset: 300_000),
    ]

    @Test(arguments: scenarios)
    func restartKeepsWhatItPromised(scenario: Scenario) throws {
        let machine = try BootedDirectory(boot: "first-boot\n")
        defer { withExtendedLifetime(machine) {} }  // removes the directory when the test ends
        let (directory, bootFile) = (machine.directory, machine.bootFile)
        let configure: (inout ReceiverConfiguration) -> Void = {
            $0.syncMode = scenario.syncMode
            $0.checkpointInterval = scenario.checkpointInterval
            $0.bootIDPath = bootFile
        }
        let body = TestReceiver.bytes(500_000, seed: 31)
        let path: String
        do {
            let first = try TestReceiver(directory: directory, configure: configure)
            defer { first.stop() }
            let created = try first.client().request("POST", "/uploads",
                                                     headers: ResumableUploadTests.creationHeaders(version: 8, complete: false),
                                                     body: Array(body[0..<100_000]))
            #expect(created.status == 201)
            #expect(created["upload-offset"] == "100000")
            path = try ResumableUploadTests.path(of: created["location"])
            let appended = try first.client().request("PATCH", path,
                                                      headers: ResumableUploadTests.patchHeaders(version: 8, offset: 100_000, complete: false),
                                                      body: Array(body[100_000..<300_000]))
            #expect(appended.status == 204)
            #expect(appended["upload-offset"] == "300000")
        }
        if scenario.rebooted { try machine.boot("second-boot\n") }
        let second = try TestReceiver(directory: directory, configure: configure)
        defer { second.stop() }
        let probe = try second.client().request("HEAD", path)
        #expect(probe.status == 204)
        #expect(probe["upload-offset"] == String(scenario.expectedOffset))
        let offset = scenario.expectedOffset
        try second.completeUpload(path, body: body, from: offset, version: 8)
    }

    /// An upload sent in short appends is checkpointed once the interval has passed since its
    /// last checkpoint, whichever append the bytes come in: a reboot costs at most that much.
    @Test func shortAppendsAreCheckpointedOnceTheIntervalPassed() throws {
        let machine = try BootedDirectory(boot: "first-boot")
        defer { withExtendedLifetime(machine) {} }  // removes the directory when the test ends
        let (directory, bootFile) = (machine.directory, machine.bootFile)
        let clock = TestReceiver.ManualClock()
        let configure: (inout ReceiverConfiguration) -> Void = { $0.bootIDPath = bootFile; $0.checkpointInterval = 5 }
        let body = TestReceiver.bytes(300_000, seed: 34)
        let path: String
        do {
            let first = try TestReceiver(directory: directory, clock: clock, configure: configure)
            defer { first.stop() }
            path = try first.createPartialUpload(body[0..<100_000], version: 8)
            clock.advance(by: 6)  // due: the first piece of the next append is checkpointed
            for (start, end) in [(100_000, 100_001), (100_001, 200_000)] {
                let appended = try first.client().request("PATCH", path,
                                                          headers: ResumableUploadTests.patchHeaders(version: 8, offset: start, complete: false),
                                                          body: Array(body[start..<end]))
                #expect(appended.status == 204)
            }
        }
        try machine.boot("second-boot")
        let second = try TestReceiver(directory: directory, clock: clock, configure: configure)
        defer { second.stop() }
        #expect(try second.client().request("HEAD", path)["upload-offset"] == "100001")
        try second.completeUpload(path, body: body, from: 100_001, version: 8)
    }

    /// An offset the client was told before a reboot and the receiver no longer has is refused
    /// with the lower offset, which the client resumes from.
    @Test func offsetLostToARebootIsCorrectedBy409() throws {
        let machine = try BootedDirectory(boot: "first-boot")
        defer { withExtendedLifetime(machine) {} }  // removes the directory when the test ends
        let (directory, bootFile) = (machine.directory, machine.bootFile)
        let configure: (inout ReceiverConfiguration) -> Void = { $0.bootIDPath = bootFile; $0.checkpointInterval = 3_600 }
        let body = TestReceiver.bytes(200_000, seed: 32)
        let path: String
        do {
            let first = try TestReceiver(directory: directory, configure: configure)
            defer { first.stop() }
            path = try first.createPartialUpload(body[0..<120_000], version: 6)
        }
        try machine.boot("second-boot")
        let second = try TestReceiver(directory: directory, configure: configure)
        defer { second.stop() }
        let stale = try second.client().request("PATCH", path,
                                                headers: ResumableUploadTests.patchHeaders(version: 6, offset: 120_000, complete: true),
                                                body: Array(body[120_000...]))
        #expect(stale.status == 409)
        #expect(stale["upload-offset"] == "0")
        try second.completeUpload(path, body: body, from: 0, version: 6)
    }

    /// A partial file longer than the length its upload announced (bytes from a client that
    /// broke the protocol, kept across a restart) is cut back to that length.
    @Test func restartBoundsThePartialFileByTheAnnouncedLength() throws {
        let machine = try BootedDirectory(boot: "one-boot")
        defer { withExtendedLifetime(machine) {} }  // removes the directory when the test ends
        let (directory, bootFile) = (machine.directory, machine.bootFile)
        let configure: (inout ReceiverConfiguration) -> Void = { $0.bootIDPath = bootFile }
        let body = TestReceiver.bytes(50_000, seed: 33)
        let path: String
        let partFile: String
        do {
            let first = try TestReceiver(directory: directory, configure: configure)
            defer { first.stop() }
            path = try first.createPartialUpload(body[0..<10_000], version: 8, extra: [("Upload-Length", "50000")])
            partFile = directory + "/uploads/" + path.dropFirst("/uploads/".count) + ".part"
        }
        let handle = try #require(FileHandle(forWritingAtPath: partFile))
        handle.seekToEndOfFile()
        handle.write(Data(body[10_000...] + [1, 2, 3]))
        try handle.close()
        let second = try TestReceiver(directory: directory, configure: configure)
        defer { second.stop() }
        let probe = try second.client().request("HEAD", path)
        #expect(probe["upload-offset"] == "50000")
    }
}

/// A storage directory and the boot-id file its receiver reads (`bootIDPath`), removed together.
/// `boot(_:)` writes a new boot id: what a reboot of the machine looks like to the receiver.
final class BootedDirectory {
    let directory = TestReceiver.makeTemporaryDirectory()
    var bootFile: String { directory + "-boot_id" }

    init(boot id: String) throws { try boot(id) }

    func boot(_ id: String) throws { try id.write(toFile: bootFile, atomically: true, encoding: .utf8) }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.removeItem(atPath: bootFile)
    }
}
