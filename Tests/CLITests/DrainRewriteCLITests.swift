import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A photo edited in place by a tool that sets its modification time back (`touch -r`) keeps its
/// size and time but not its change time: `drain --rescan` finds it, hashes it again and sends
/// the new bytes, where it used to print "already on the server: nothing sent".
@Suite(.serialized) struct DrainRewriteCLITests {
    /// SHA-256 of a file, by `sha256sum`.
    private func sha256(_ path: String) throws -> String {
        let run = Process()
        run.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        run.arguments = [path]
        let out = Pipe()
        run.standardOutput = out
        try run.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        return String(text.prefix { $0 != " " })
    }

    /// `touch -r reference file`: the reference's access and modification times onto the file.
    private func touch(_ file: String, likeFile reference: String) throws {
        let run = try Process.run(URL(fileURLWithPath: "/usr/bin/touch"), arguments: ["-r", reference, file])
        run.waitUntilExit()
        #expect(run.terminationStatus == 0)
    }

    @Test func aRewriteThatSetsTheTimeBackIsSentAgain() throws {
        let ws = try Workspace()
        // A JPEG with bytes after its end marker, which decoders ignore: the rewrite changes only
        // those, so the photo, its size and its verdict stay and only the bytes differ.
        let photo = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg"))))
        try ws.write("chelsea.jpg", bytes: photo + [UInt8](repeating: 0, count: 16))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let first = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url] + DrainCLITests.fast)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try server.objects().count == 1)

        let path = ws.path("chelsea.jpg"), reference = ws.root.appendingPathComponent("reference").path
        #expect(FileManager.default.createFile(atPath: reference, contents: nil))
        try touch(reference, likeFile: path)
        try ws.write("chelsea.jpg", bytes: photo + [UInt8](repeating: 1, count: 16))
        try touch(path, likeFile: reference)
        let rewritten = try sha256(path)

        let rescan = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--rescan", "--json"] + DrainCLITests.fast)
        #expect(rescan.status == 0, "\(rescan.stderr)")
        #expect(rescan.stdout.contains("\"event\":\"uploaded\"") && !rescan.stdout.contains("\"alreadyStored\":true"), "\(rescan.stdout)")
        let objects = try server.objects()
        #expect(objects.count == 2 && objects.contains { $0["sha256"] as? String == rewritten }, "\(objects)")
        let verify = try CLI.run(["verify", ws.library, "--store", ws.store])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("1 present"), "\(verify.stdout)")
    }

    /// `drain --watch` finds the same rewrite through its watches (the write and the time set
    /// back are events on the file's folder), with no rescan timer to fall back on.
    @Test func theWatcherFindsARewriteThatSetsTheTimeBack() throws {
        let ws = try Workspace()
        let photo = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg"))))
        try ws.write("chelsea.jpg", bytes: photo + [UInt8](repeating: 0, count: 16))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try Running(["drain", ws.library, "--store", ws.store, "--to", server.url, "--watch", "--rescan-interval", "0", "--json"]
                                + DrainCLITests.fast)
        defer { if drain.process.isRunning { drain.signal(SIGKILL) } }
        #expect(drain.waitForOutput(containing: "\"event\":\"watching\"", seconds: 60), "stderr: \(drain.stderr)")
        #expect(try server.objects().count == 1)

        let path = ws.path("chelsea.jpg"), reference = ws.root.appendingPathComponent("reference").path
        #expect(FileManager.default.createFile(atPath: reference, contents: nil))
        try touch(reference, likeFile: path)
        try ws.write("chelsea.jpg", bytes: photo + [UInt8](repeating: 1, count: 16))
        try touch(path, likeFile: reference)
        let rewritten = try sha256(path)
        #expect(DrainWatchCLITests.waitForObjects(server, count: 2, seconds: 60) != nil, "stdout: \(drain.stdout)\nstderr: \(drain.stderr)")
        #expect(try server.objects().contains { $0["sha256"] as? String == rewritten })
        drain.signal(SIGTERM)
        #expect(drain.wait() == 0, "stderr: \(drain.stderr)")
    }

    /// chmod alone changes the change time and not the bytes: the rescan hashes the file again
    /// and sends nothing.
    @Test func aChangeOfModeAloneSendsNothing() throws {
        let ws = try Workspace()
        try ws.write("chelsea.jpg", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg")))))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let first = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url] + DrainCLITests.fast)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(chmod(ws.path("chelsea.jpg"), 0o600) == 0)
        let rescan = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--rescan", "--json"] + DrainCLITests.fast)
        #expect(rescan.status == 0, "\(rescan.stderr)")
        #expect(!rescan.stdout.contains("\"event\":\"uploaded\"") && !rescan.stdout.contains("\"event\":\"analysed\""), "\(rescan.stdout)")
        #expect(try server.objects().count == 1)
    }
}
