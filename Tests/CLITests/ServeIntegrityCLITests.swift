import Foundation
import Testing

/// `photodrain serve` keeps its objects honest (issue 31 item 5): a byte flipped in a stored
/// object, the size and mtime kept, made `verify` count it present and a fresh library draining
/// to the receiver print "all already on the server: nothing sent".
@Suite(.serialized) struct ServeIntegrityCLITests {
    static let fast = ["--analysis-size", "96"]

    @Test func aFlippedObjectIsNotPresentAndAFreshLibrarySendsItAgain() throws {
        let a = try Workspace()
        let photos = try a.addSmallSamples()
        let received = a.root.appendingPathComponent("received").path
        let server = try ServeProcess(directory: received)
        let first = try CLI.run(["drain", a.library, "--store", a.store, "--to", server.url] + Self.fast)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let object = try #require(try server.objects().first)
        let id = try #require(object["id"] as? String)
        let sha = try #require(object["sha256"] as? String)
        try Self.flipByteKeepingMtime(received + "/objects/" + id)

        let found = try CLI.run(["verify", a.library, "--store", a.store])
        #expect(found.status == 1, "stdout: \(found.stdout)")
        #expect(found.stdout.contains("\(photos.count - 1) present, 1 missing"), "\(found.stdout)")
        #expect(FileManager.default.fileExists(atPath: received + "/quarantine/" + id))
        #expect(FileManager.default.fileExists(atPath: received + "/quarantine/\(id).json"))
        #expect(server.running.waitForError(containing: "moved with its sidecar to quarantine/\(id)"))
        #expect(server.running.stderr.contains(sha))

        // A fresh library with the same photos sends the one the receiver no longer holds.
        let b = try Workspace()
        for photo in photos {
            try b.write(photo, bytes: Array(try Data(contentsOf: URL(fileURLWithPath: a.path(photo)))))
        }
        let second = try CLI.run(["drain", b.library, "--store", b.store, "--to", server.url, "--json"] + Self.fast)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(second.stdout.contains("\"alreadyOnTheServer\":\(photos.count - 1)"), "\(second.stdout)")
        let stored = try server.objects()
        #expect(stored.count == photos.count)
        let again = try #require(stored.first { $0["sha256"] as? String == sha })
        #expect(again["id"] as? String != id)
        #expect(try CLI.run(["verify", b.library, "--store", b.store]).status == 0)
    }

    /// `--scrub-rate`: a restarted receiver's first pass finds a flip with no request made; a bad
    /// value is a usage error, and help documents the option.
    @Test func theScrubRateOptionRunsTheScrub() throws {
        let ws = try Workspace()
        let received = ws.root.appendingPathComponent("received").path
        let content = [UInt8]((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let file = ws.root.appendingPathComponent("blob.bin").path
        try Data(content).write(to: URL(fileURLWithPath: file))
        let id: String
        do {
            let server = try ServeProcess(directory: received, extra: ["--scrub-rate", "off"])
            let upload = try CLI.run(["upload", file, "--to", server.url])
            #expect(upload.status == 0, "stderr: \(upload.stderr)")
            id = try #require(try server.objects().first?["id"] as? String)
        }
        try Self.flipByteKeepingMtime(received + "/objects/" + id)
        let server = try ServeProcess(directory: received, extra: ["--scrub-rate", "64M"])
        #expect(server.running.waitForError(containing: "scrub: "))
        #expect(server.running.stderr.contains("corrupt, moved to quarantine/: \(id)"), "\(server.running.stderr)")
        #expect(FileManager.default.fileExists(atPath: received + "/quarantine/" + id))
        #expect(!server.running.stderr.contains("/objects"), "a request was made: \(server.running.stderr)")

        let bad = try CLI.run(["serve", "--dir", received, "--port", "0", "--scrub-rate", "fast"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--scrub-rate"))
        let help = try CLI.run(["serve", "--help"])
        #expect(help.stdout.contains("--scrub-rate"))
        #expect(help.stdout.contains("8M"))
    }

    /// Flips the low bit of the file's 100th byte in place, then puts its access and modification
    /// times back (`touch -r`): only the ctime says it changed.
    static func flipByteKeepingMtime(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        let fd = open(path, O_RDWR)
        guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        defer { close(fd) }
        var byte: UInt8 = 0
        guard pread(fd, &byte, 1, 100) == 1 else { throw CocoaError(.fileReadUnknown) }
        byte ^= 0x01
        guard pwrite(fd, &byte, 1, 100) == 1 else { throw CocoaError(.fileWriteUnknown) }
        var times = [info.st_atim, info.st_mtim]
        guard futimens(fd, &times) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}
