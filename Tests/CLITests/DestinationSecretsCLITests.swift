import Foundation
import Testing
@testable import AssetStore

/// No secret from the URL in the store or in output: `--to` with user info or a query is refused
/// (exit 64) pointing at `--token-file`, and a store an earlier PhotoDrain kept one in is cleaned
/// when it is opened, so `status`, `status --json` and `verify --json` never print it and the
/// database file no longer holds it.
@Suite(.serialized) struct DestinationSecretsCLITests {
    static let password = "PASS-\(UUID().uuidString.prefix(8))"
    static let token = "SECRET-\(UUID().uuidString.prefix(8))"

    private func expectNoSecret(_ text: String, _ what: String) {
        let lowered = text.lowercased()
        #expect(!lowered.contains(Self.password.lowercased()) && !lowered.contains(Self.token.lowercased()), "the secret is in \(what)")
    }

    /// The database file and its sidecars as text.
    private func storeText(_ ws: Workspace) -> String {
        ["", "-wal", "-shm", "-journal"].compactMap { FileManager.default.contents(atPath: ws.store + $0) }
            .map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n")
    }

    @Test func aURLHoldingASecretIsRefused() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let withUser = server.url.replacingOccurrences(of: "http://", with: "http://bob:\(Self.password)@")
        let withQuery = server.url + "?access_token=\(Self.token)"
        for url in [withUser, withQuery] {
            let store = ["--store", ws.store, "--to", url]
            for command in [["drain", ws.library] + store, ["wake", ws.library] + store, ["verify", ws.library] + store,
                            ["upload", ws.path("hopper.jpg"), "--to", url]] {
                let run = try CLI.run(command)
                #expect(run.status == 64, "\(command[0]) \(url): \(run.stdout)\(run.stderr)")
                #expect(run.stderr.contains("--token-file"), "\(run.stderr)")
                expectNoSecret(run.stdout + run.stderr, "\(command[0])'s output")
            }
        }
        expectNoSecret(storeText(ws), "the store")
        #expect(try server.objects().isEmpty)
    }

    /// A store at schema 8 holding the secret the way PhotoDrain kept it (the destination with
    /// its user info lowercased, the job's URL as given): opened by this PhotoDrain, the secret
    /// is gone from the file and from every summary, and the same destination without it is not
    /// a new destination.
    @Test func anOlderStoreHoldingASecretIsCleaned() throws {
        let ws = try Workspace()
        try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let given = server.url.replacingOccurrences(of: "http://", with: "http://bob:\(Self.password)@") + "?access_token=\(Self.token)"
        let kept = given.lowercased().replacingOccurrences(of: "?access_token=\(Self.token.lowercased())", with: "?access_token=\(Self.token)")
        do {
            let db = try Database(path: ws.store)
            for version in 0..<8 {
                try db.execute(Schema.migrations[version])
                try db.execute("PRAGMA user_version = \(version + 1)")
            }
            let root = try #require(FileTree.realPath(ws.library))
            try db.run("INSERT INTO meta(key, value) VALUES ('root', ?), ('destination', ?)", [.text(root), .text(kept)])
            try db.run("""
                INSERT INTO assets(id, path, size, mtime_ns, sha256, discovered_at, analyzed_at, uploaded_at, upload_proof, last_error)
                VALUES (1, 'old.jpg', 5, 1, 'ab', 1, 1, 2, 'legacy', ?)
                """, [.text("503 from \(given)")])
            try db.run("INSERT INTO uploads(asset_id, destination, generation, uploaded_at, proof) VALUES (1, ?, 0, 2, 'legacy')", [.text(kept)])
            // Another destination the library went to, whose path has capitals: they stay.
            try db.run("INSERT INTO uploads(asset_id, destination, generation, uploaded_at, proof) VALUES (1, ?, 0, 2, 'legacy')",
                       [.text("http://bob:\(Self.password.lowercased())@127.0.0.1:9/Family/Uploads?access_token=\(Self.token)")])
            try db.run("""
                INSERT INTO upload_jobs(asset_id, asset_generation, state, destination, resume_url, created_at, updated_at)
                VALUES (1, 0, 'pending', ?, ?, 1, 1)
                """, [.text(given), .text(server.url.replacingOccurrences(of: "http://", with: "http://bob:\(Self.password)@") + "/abc")])
        }
        let status = try CLI.run(["status", ws.library, "--store", ws.store])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("to \(server.url)"), "\(status.stdout)")
        #expect(status.stdout.contains("to http://127.0.0.1:9/Family/Uploads"), "\(status.stdout)")
        let statusJSON = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let verify = try CLI.run(["verify", ws.library, "--store", ws.store, "--json"])
        #expect(verify.stdout.contains("\"summary\""), "\(verify.stdout)\(verify.stderr)")
        // The destination without the secret is the library's destination, not a new one.
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--analysis-size", "96", "--json"])
        #expect(drain.status == 0, "\(drain.stderr)")
        let after = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        for (name, output) in [("status", status), ("status --json", statusJSON), ("verify --json", verify), ("drain", drain), ("status after", after)] {
            expectNoSecret(output.stdout + output.stderr, name)
        }
        expectNoSecret(storeText(ws), "the store")
    }
}
