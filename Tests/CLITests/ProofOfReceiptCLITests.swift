import Foundation
import Testing

/// `verify` finds what a receiver lost and `--repair` queues it
/// again; a second destination is not told "uploaded" for photos it never got.
@Suite(.serialized) struct ProofOfReceiptCLITests {
    static let fast = ["--analysis-size", "96"]

    @Test func verifyFindsADeletedObjectAndRepairSendsItAgain() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let received = ws.root.appendingPathComponent("received").path
        let server = try ServeProcess(directory: received)
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url] + Self.fast)
        #expect(drain.status == 0, "stderr: \(drain.stderr)")
        let clean = try CLI.run(["verify", ws.library, "--store", ws.store])
        #expect(clean.status == 0, "stdout: \(clean.stdout) stderr: \(clean.stderr)")
        #expect(clean.stdout.contains("\(photos.count) present, 0 missing"))

        // The receiver loses one object's bytes.
        let objects = try server.objects()
        let lost = try #require(objects.first)
        let id = try #require(lost["id"] as? String)
        try FileManager.default.removeItem(atPath: received + "/objects/" + id)
        let found = try CLI.run(["verify", ws.library, "--store", ws.store, "--json"])
        #expect(found.status == 1)
        let missing = found.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["state"] as? String == "missing" }
        #expect(missing.count == 1)
        #expect(missing.first?["serverID"] as? String == id)

        let repaired = try CLI.run(["verify", ws.library, "--store", ws.store, "--repair"])
        #expect(repaired.status == 1)
        #expect(repaired.stdout.contains("1 queued again"))
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(counts["uploaded"] as? Int == photos.count - 1)

        let again = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--json"] + Self.fast)
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(again.lines.filter { $0.contains("\"event\":\"uploaded\"") }.count == 1)
        let after = try CLI.run(["verify", ws.library, "--store", ws.store])
        #expect(after.status == 0, "stdout: \(after.stdout)")
    }

    @Test func aSecondDestinationIsRefusedUntilChosenAndThenGetsEveryPhoto() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let first = try ServeProcess(directory: ws.root.appendingPathComponent("first").path)
        let second = try ServeProcess(directory: ws.root.appendingPathComponent("second").path)
        #expect(try CLI.run(["drain", ws.library, "--store", ws.store, "--to", first.url] + Self.fast).status == 0)

        let refused = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", second.url] + Self.fast)
        #expect(refused.status == 64)
        #expect(refused.stderr.contains(first.url) && refused.stderr.contains(second.url))
        #expect(refused.stderr.contains("--new-destination"))
        #expect(try second.objects().isEmpty)

        let chosen = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", second.url, "--new-destination"] + Self.fast)
        #expect(chosen.status == 0, "stderr: \(chosen.stderr)")
        #expect(try second.objects().count == photos.count)
        let status = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(status.stdout.contains("uploaded elsewhere       \(photos.count) to \(first.url)"), "\(status.stdout)")
        #expect(try CLI.run(["verify", ws.library, "--store", ws.store]).status == 0)
        #expect(try CLI.run(["verify", ws.library, "--store", ws.store, "--to", first.url]).status == 0)
    }
}
