import Foundation
import Testing

/// `photodrain upload` against a real `photodrain serve`: files that are not plain, and names a
/// header cannot carry as they are.
@Suite struct UploadCLITests {
    /// Runs `photodrain arguments...`, killing it if it has not exited within `seconds`: returns
    /// the status, or nil when it had to be killed.
    static func run(_ arguments: [String], seconds: Double) throws -> (status: Int32?, stdout: String) {
        let running = try Running(arguments)
        let deadline = Date().addingTimeInterval(seconds)
        while running.process.isRunning && Date() < deadline { usleep(20_000) }
        if running.process.isRunning {
            running.signal(SIGKILL)
            running.wait()
            return (nil, running.stdout)
        }
        return (running.wait(), running.stdout)
    }

    /// A small file waits for its digest before its first byte anyway, so
    /// `upload` asks the receiver by digest first; a file it already holds is sent no byte.
    @Test func aSmallFileTheReceiverHoldsIsNotSentAgain() throws {
        let ws = try Workspace()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let photo = CLI.sample("chelsea.jpg")
        let first = try CLI.run(["upload", photo, "--to", server.url, "--json"])
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let second = try CLI.run(["upload", photo, "--to", server.url, "--json"])
        #expect(second.status == 0, "stderr: \(second.stderr)")
        let rows = try [first, second].map { try #require(JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) as? [String: Any]) }
        #expect(rows[0]["alreadyStored"] == nil)
        #expect(rows[1]["alreadyStored"] as? Bool == true)
        #expect(rows[1]["bytes"] as? Int == 0)
        #expect(rows[1]["serverID"] as? String == rows[0]["serverID"] as? String)
        #expect(try server.objects().count == 1)
    }

    /// A FIFO's open (and reads) wait for a writer that never comes, so
    /// `upload` blocked forever. It is not a regular file: a counted failure at once, exit 65.
    @Test func aFIFOFailsAtOnceInsteadOfBlocking() throws {
        let ws = try Workspace()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let fifo = ws.root.appendingPathComponent("photo.jpg").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let photo = CLI.sample("chelsea.jpg")
        let (status, stdout) = try Self.run(["upload", fifo, photo, "--to", server.url], seconds: 20)
        #expect(status == 65, "upload of a FIFO \(status == nil ? "was still blocked after 20 s" : "exited \(status ?? 0)")")
        #expect(stdout.contains("not a regular file"))
        #expect(try server.objects().count == 1)  // the photo after it was still uploaded
    }

    /// A name with a tab or a line break cannot go into a header as it is, but
    /// Content-Disposition's filename* percent-encodes it: such files upload, and the receiver
    /// keeps the name exactly.
    @Test(arguments: ["tab\there.jpg", "line\nbreak.jpg", "cr\rand del\u{7F}.jpg"])
    func namesWithControlCharactersAreEncodedNotRefused(name: String) throws {
        let ws = try Workspace()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let path = ws.root.appendingPathComponent(name).path
        try FileManager.default.copyItem(atPath: CLI.sample("chelsea.jpg"), toPath: path)
        let result = try CLI.run(["upload", path, "--to", server.url, "--json"])
        #expect(result.status == 0, "stdout: \(result.stdout) stderr: \(result.stderr)")
        let objects = try server.objects()
        #expect(objects.count == 1)
        #expect(objects.first?["filename"] as? String == name)
    }
}

/// Legal URLs never crash the client; an invalid one is a usage error.
@Suite struct UploadURLCLITests {
    @Test func aPercentEncodedOrNonASCIIPathIsAnsweredNotACrash() throws {
        let ws = try Workspace()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let base = server.url.replacingOccurrences(of: "/uploads", with: "")
        for path in ["/my%20uploads", "/f%C3%B6tos/uploads", "/fötos"] {
            let result = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", base + path])
            // serve has no endpoint there: a clear failure, exit 1, never a signal.
            #expect(result.status == 1, "\(path): status \(result.status), stderr \(result.stderr)")
            #expect(result.stdout.contains("not-found"), "\(path): \(result.stdout)")
        }
        // A query is refused before anything is sent (a destination URL holds no secret, and a
        // query is where one would be): a usage error naming --token-file, never a crash.
        let upload = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", server.url + "?note=a%20b"])
        #expect(upload.status == 64 && upload.stderr.contains("--token-file"), "\(upload.stdout) \(upload.stderr)")
    }

    @Test func aURLWithASpaceIsAUsageError() throws {
        let result = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", "http://127.0.0.1:9/my uploads"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("%20"))
    }
}

/// An https:// destination that is a plain-http receiver is a setting to fix, said at once: it
/// used to be reported as "timed-out" after 41 s.
@Suite struct WrongSchemeCLITests {
    @Test func httpsToAPlainReceiverSaysSoAtOnce() throws {
        let ws = try Workspace()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let https = server.url.replacingOccurrences(of: "http://", with: "https://")
        let started = Date()
        let upload = try CLI.run(["upload", CLI.sample("chelsea.jpg"), "--to", https])
        #expect(upload.status == 1)
        #expect(upload.stdout.contains("is it http://?"), "\(upload.stdout)")
        #expect(!upload.stderr.contains("--ca-file"), "\(upload.stderr)")
        _ = try ws.addSmallSamples()
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", https, "--analysis-size", "96"])
        #expect(drain.status == 1)
        #expect(drain.stderr.contains("is it http://?"), "\(drain.stderr)")
        // A guard against the old 41 s stall, far above what it takes (well under a second here).
        #expect(Date().timeIntervalSince(started) < 20)
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(counts["failed"] as? Int == 0)
    }
}

/// A 20 MB upload with `--bwlimit 4M` takes at least 4.5 s (20 MB at 4 MiB/s is
/// 4.8 s): the limit holds for the whole transfer, not only its start.
@Suite struct BandwidthLimitCLITests {
    @Test func aBandwidthLimitHoldsForTheWholeUpload() throws {
        let ws = try Workspace()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        var bytes = [UInt8](repeating: 0, count: 20_000_000)
        for index in stride(from: 0, to: bytes.count, by: 4096) { bytes[index] = UInt8(truncatingIfNeeded: index / 4096) }
        try ws.write("big.bin", bytes: bytes)
        let started = Date()
        let upload = try CLI.run(["upload", ws.path("big.bin"), "--to", server.url, "--bwlimit", "4M"],
                                 environment: ["XDG_STATE_HOME": ws.root.appendingPathComponent("state").path])
        let seconds = Date().timeIntervalSince(started)
        #expect(upload.status == 0, "\(upload.stdout)\(upload.stderr)")
        #expect(seconds >= 4.5, "20 MB at --bwlimit 4M took \(seconds) s")
        let bad = try CLI.run(["upload", ws.path("big.bin"), "--to", server.url, "--bwlimit", "fast"])
        #expect(bad.status == 64 && bad.stderr.contains("not a rate"))
    }
}
