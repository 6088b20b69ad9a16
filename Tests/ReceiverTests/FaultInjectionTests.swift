import Foundation
import Receiver
import Testing
import UploadProtocol

/// Injected cuts and a full disk: the prefix before a cut is kept and resumable, a full disk is a
/// 507 (or a dropped connection after a 104) and never a partial object.
@Suite struct FaultInjectionTests {
    @Test func cutsKeepThePrefixAndTheUploadResumes() throws {
        let faults = FaultInjection(cutAtOffsets: [30_000, 120_000])
        let receiver = try TestReceiver { $0.faultInjection = faults }
        defer { receiver.stop(); receiver.removeDirectory() }
        let body = TestReceiver.bytes(200_000, seed: 13)
        let creator = try receiver.client()
        creator.sendRequest("POST", "/uploads", headers: ResumableUploadTests.creationHeaders(version: 6, complete: true), body: body)
        let interim = try creator.readNext()
        #expect(interim.status == 104)
        let path = try ResumableUploadTests.path(of: interim["location"])
        #expect(creator.isClosedByServer())

        var offset = 0
        var attempts = 0
        var id: String?
        while id == nil && attempts < 5 {
            attempts += 1
            let probe = try receiver.client().request("HEAD", path, headers: [("Upload-Draft-Interop-Version", "6")])
            offset = try #require(Int(probe["upload-offset"] ?? ""))
            let client = try receiver.client()
            client.sendRequest("PATCH", path, headers: ResumableUploadTests.patchHeaders(version: 6, offset: offset, complete: true),
                               body: Array(body[offset...]))
            if let response = try? client.readResponse() {
                #expect(response.status == 201)
                id = response["x-server-resource-id"]
            } else {
                #expect(offset < 120_000)  // only the first resume is cut
            }
        }
        #expect(attempts == 2)
        #expect(faults.firedCount == 2)
        #expect(try receiver.content(of: try #require(id)) == body)
    }

    @Test func diskFullIs507AndLeavesNothing() throws {
        let receiver = try TestReceiver { $0.faultInjection = FaultInjection(diskFullAfterBytes: 10_000) }
        defer { receiver.stop(); receiver.removeDirectory() }
        let response = try receiver.client().request("PUT", "/uploads", body: TestReceiver.bytes(50_000))
        #expect(response.status == 507)
        #expect(try receiver.objects().isEmpty)
        #expect(receiver.files(in: "objects").isEmpty)
        #expect(receiver.files(in: "tmp").isEmpty)
        receiver.stop()  // waits for the connection threads, so every log line is written
        #expect(receiver.log.lines.contains { $0.contains("PUT /uploads 507 disk full") })
    }

    @Test func diskFullAfter104DropsTheConnection() throws {
        let receiver = try TestReceiver { $0.faultInjection = FaultInjection(diskFullAfterBytes: 10_000) }
        defer { receiver.stop(); receiver.removeDirectory() }
        let client = try receiver.client()
        client.sendRequest("POST", "/uploads", headers: ResumableUploadTests.creationHeaders(version: 8, complete: true),
                           body: TestReceiver.bytes(50_000))
        let interim = try client.readNext()
        #expect(interim.status == 104)
        #expect(client.isClosedByServer())  // no 5xx after a 104
        let probe = try receiver.client().request("HEAD", try ResumableUploadTests.path(of: interim["location"]))
        #expect(probe.status == 204)
        #expect(probe["upload-offset"] == "10000")  // what was written before the failure is kept
        #expect(try receiver.objects().isEmpty)
    }
}
