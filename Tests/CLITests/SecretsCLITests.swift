import Foundation
import Testing

/// The bearer token never appears in output, logs, errors or the store.
@Suite(.serialized) struct SecretsCLITests {
    static let token = "s3cr3t-token-\(UUID().uuidString.prefix(8))"

    @Test func tokenNeverLeaks() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let tokenFile = ws.root.appendingPathComponent("token").path
        let wrongFile = ws.root.appendingPathComponent("wrong").path
        try Data((Self.token + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
        try Data("wrong-\(Self.token)\n".utf8).write(to: URL(fileURLWithPath: wrongFile))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path, extra: ["--token-file", tokenFile])
        let fast = ["--analysis-size", "96"]

        // Wrong token: a configuration error (exit 1) whose message names no secret; no photo
        // is failed or charged.
        let refused = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--token-file", wrongFile, "--json"] + fast)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("refused"))
        #expect(!refused.stdout.contains("\"terminal\":true"))
        let status = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(status.status == 0)
        // With the right token everything uploads (--retry-failed is harmless with nothing failed).
        let retried = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--token-file", tokenFile, "--retry-failed", "--json"] + fast)
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(!retried.stdout.contains("\"terminal\":true"))
        let after = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(counts["failed"] as? Int == 0 && counts["uploaded"] as? Int == counts["total"] as? Int)
        let upload = try CLI.run(["upload", ws.path("hopper.jpg"), "--to", server.url, "--token-file", tokenFile, "--json"])
        #expect(upload.status == 0, "\(upload.stdout)\(upload.stderr)")
        let noToken = try CLI.run(["upload", ws.path("rocket.jpg"), "--to", server.url])
        #expect(noToken.status == 1)

        server.running.signal(SIGTERM)
        _ = server.running.wait()
        var haystacks = [retried.stdout, retried.stderr, refused.stdout, refused.stderr, status.stdout, status.stderr, upload.stdout, upload.stderr,
                         noToken.stdout, noToken.stderr, server.running.stdout, server.running.stderr]
        let verdicts = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        haystacks.append(verdicts.stdout)
        // The store's files, byte for byte (database, WAL).
        for suffix in ["", "-wal", "-shm"] {
            if let data = FileManager.default.contents(atPath: ws.store + suffix) {
                haystacks.append(String(decoding: data, as: UTF8.self))
            }
        }
        for (index, text) in haystacks.enumerated() {
            #expect(!text.contains(Self.token), "the token leaked in output \(index)")
        }
    }

    /// `serve` started with a token file that holds a space or a control
    /// character inside the token, which every client refuses to send, so every upload was refused.
    /// Now it refuses to start, as the clients do, naming the file and never the token.
    @Test(arguments: ["\(token) trailing-word\n", "\(token)\tafter-a-tab", "\(token)\nsecond-line\n", "\(token)\u{7F}"])
    func serveRefusesATokenFileNoClientWouldSend(content: String) throws {
        let ws = try Workspace()
        let tokenFile = ws.root.appendingPathComponent("token").path
        try Data(content.utf8).write(to: URL(fileURLWithPath: tokenFile))
        let storage = ws.root.appendingPathComponent("received").path
        let serve = try Running(["serve", "--dir", storage, "--port", "0", "--token-file", tokenFile])
        let started = serve.waitForOutput(containing: "/uploads")
        if started { serve.signal(SIGTERM) }
        let status = serve.wait()
        #expect(!started, "serve started with the token file")
        #expect(status == 64, "\(serve.stderr)")
        #expect(serve.stderr.contains("token file \(tokenFile)"), "\(serve.stderr)")
        #expect(!serve.stderr.contains(Self.token) && !serve.stdout.contains(Self.token))
        #expect(!FileManager.default.fileExists(atPath: storage), "serve started")
        let upload = try CLI.run(["upload", CLI.sample("hopper.jpg"), "--to", "http://127.0.0.1:9/uploads", "--token-file", tokenFile])
        #expect(upload.status == 64, "the client refuses the same file: \(upload.stderr)")
    }
}
