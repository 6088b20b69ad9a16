import Foundation
import Testing

/// The token never appears on the `wake` + `agent` path either: not in the upload jobs kept in the
/// store, not in the errors a refused agent records, not in what either prints.
@Suite(.serialized) struct SecretsJobsCLITests {
    static let token = "jobs-s3cr3t-\(UUID().uuidString.prefix(12))"

    /// The store's files as text (database, WAL, shared memory).
    static func storeText(_ ws: Workspace) -> String {
        ["", "-wal", "-shm"].compactMap { FileManager.default.contents(atPath: ws.store + $0) }
            .map { String(decoding: $0, as: UTF8.self) }.joined()
    }

    @Test func tokenNeverReachesJobsOrTheirErrors() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let tokenFile = ws.root.appendingPathComponent("token").path
        let wrongFile = ws.root.appendingPathComponent("wrong").path
        try Data((Self.token + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
        try Data("not-\(Self.token)\n".utf8).write(to: URL(fileURLWithPath: wrongFile))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path, extra: ["--token-file", tokenFile])
        let fast = ["--analysis-size", "96"]

        // wake analyses, then creates the jobs; they sit in the store until an agent performs them.
        var haystacks: [String] = []
        var created = false
        for _ in 0..<3 where !created {
            let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url, "--json"] + fast)
            #expect(wake.status == 75, "\(wake.stdout)\(wake.stderr)")
            created = wake.stdout.contains("\"created\":") && !wake.stdout.contains("\"created\":0")
            haystacks += [wake.stdout, wake.stderr]
        }
        #expect(created, "wake created no upload jobs")
        haystacks.append(Self.storeText(ws))
        // An agent with the wrong token is refused: the jobs record a sanitized error.
        let refused = try CLI.run(["agent", ws.library, "--store", ws.store, "--token-file", wrongFile, "--exit-when-idle", "1", "--json"])
        haystacks += [refused.stdout, refused.stderr, Self.storeText(ws)]
        // An agent whose every job was refused does not say it is done.
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("the destination refused the upload (unauthorized"), "\(refused.stderr)")
        // wake has no --token-file: its advice names the agent's.
        let again = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url] + fast)
        haystacks += [again.stdout, again.stderr]
        #expect(again.status == 1, "\(again.stdout)\(again.stderr)")
        #expect(again.stderr.contains("--token-file given to `photodrain agent`"), "\(again.stderr)")
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        haystacks += [status.stdout, status.stderr]
        // A missing token file is an error that names the file, not a secret.
        let missing = try CLI.run(["agent", ws.library, "--store", ws.store, "--token-file", tokenFile + ".missing", "--exit-when-idle", "1"])
        #expect(missing.status != 0)
        haystacks += [missing.stdout, missing.stderr]
        server.running.signal(SIGTERM)
        _ = server.running.wait()
        haystacks += [server.running.stdout, server.running.stderr]
        // The wrong token was really sent and refused: the test would see a leak of it too.
        #expect(server.running.stderr.contains(" 401"), "receiver log: \(server.running.stderr.suffix(600))")
        for (index, text) in haystacks.enumerated() {
            #expect(!text.contains(Self.token), "the token leaked in output \(index)")
        }
    }
}
