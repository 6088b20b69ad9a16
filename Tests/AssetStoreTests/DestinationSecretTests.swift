import Foundation
import Testing
@testable import AssetStore

/// No secret in the store: a destination is kept without the user info, query and fragment of
/// the URL it came from, and a store an earlier PhotoDrain wrote them into is cleaned when it is
/// migrated (store migration 9), to the bytes of its file.
@Suite struct DestinationSecretTests {
    private static let password = "Pa55-word-\(UUID().uuidString.prefix(6))"
    private static let token = "tok3n-\(UUID().uuidString.prefix(6))"
    private static let secretURL = "http://bob:\(password)@127.0.0.1:8080/Photo%20Uploads/Inbox?access_token=\(token)#frag"
    private static let clean = "http://127.0.0.1:8080/Photo%20Uploads/Inbox"

    /// The store's file and its WAL as text, after a checkpoint.
    private func fileText(_ library: TemporaryLibrary) -> String {
        ["", "-wal", "-shm"].compactMap { FileManager.default.contents(atPath: library.storePath + $0) }
            .map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n")
    }

    private func expectNoSecret(_ text: String, _ comment: Comment? = nil) {
        let lowered = text.lowercased()
        #expect(!lowered.contains(Self.password.lowercased()), comment)
        #expect(!lowered.contains(Self.token.lowercased()), comment)
        #expect(!lowered.contains("bob:"), comment)
    }

    @Test func theKeyKeepsThePathsCaseAndDropsWhatCouldBeSecret() {
        #expect(AssetStore.destinationKey(Self.secretURL) == Self.clean)
        #expect(AssetStore.destinationKey("HTTP://Photos.Example:8080/Uploads/") == "http://photos.example:8080/Uploads")
        #expect(AssetStore.destinationKey("https://host/uploads?") == "https://host/uploads")
        // An S3 identity is kept as it is: a prefix may hold any character.
        #expect(AssetStore.destinationKey("s3://photos/Family?2024 at http://127.0.0.1:9000") == "s3://photos/Family?2024 at http://127.0.0.1:9000")
    }

    @Test func aSecretInTheURLNeverReachesTheFile() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) { #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: asset)) }
        try store.useDestination(Self.secretURL, allowChange: false)
        let asset = try #require(try store.assets(in: .analyzed).first)
        let job = try #require(try store.createJob(for: asset, destination: Self.secretURL, inflightLimit: 10))
        #expect(job.destination == Self.clean)
        #expect(try store.activeDestination() == Self.clean)
        #expect(try store.destinationCounts().map(\.destination) == [Self.clean])
        store.checkpoint()
        expectNoSecret(fileText(library))
    }

    /// A store migration 9 finds holding secrets (as PhotoDrain kept them before): every copy is
    /// gone from the file, the destination is the same one without them (the next run with the
    /// clean URL is not a new destination), and the marks are kept.
    @Test func migrationNineTakesTheSecretsOutOfAnOlderStore() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let lowered = AssetStore.destinationKey(Self.clean).replacingOccurrences(of: "127.0.0.1", with: "bob:\(Self.password.lowercased())@127.0.0.1")
            + "?access_token=\(Self.token)"
        do {
            let db = try Database(path: library.storePath)
            for version in 0..<8 {
                try db.execute(Schema.migrations[version])
                try db.execute("PRAGMA user_version = \(version + 1)")
            }
            let root = try #require(FileTree.realPath(library.libraryPath))
            try db.run("INSERT INTO meta(key, value) VALUES ('root', ?), ('destination', ?)", [.text(root), .text(lowered)])
            try db.run("""
                INSERT INTO assets(id, path, size, mtime_ns, sha256, discovered_at, analyzed_at, uploaded_at, upload_proof, last_error)
                VALUES (1, 'a.jpg', 5, 1, 'ab', 1, 1, 2, 'verified', ?), (2, 'gone.jpg', 5, 1, 'cd', 1, 1, NULL, NULL, NULL)
                """, [.text("could not connect to \(Self.secretURL)")])
            try db.run("INSERT INTO uploads(asset_id, destination, generation, uploaded_at, proof) VALUES (1, ?, 0, 2, 'verified')", [.text(lowered)])
            try db.run("""
                INSERT INTO upload_jobs(asset_id, asset_generation, state, destination, resume_url, error_message, created_at, updated_at)
                VALUES (2, 0, 'failed', ?, ?, ?, 1, 1)
                """, [.text(Self.secretURL), .text("http://bob:\(Self.password)@127.0.0.1:8080/Photo%20Uploads/Inbox/abc"),
                      .text("503 from \(Self.secretURL)")])
            // A row holding the secret deleted before the upgrade: its bytes are left in the file
            // (as SQLite builds without secure_delete leave them; Debian's has it on by default).
            try db.execute("PRAGMA secure_delete = OFF")
            try db.run("INSERT INTO upload_jobs(asset_id, asset_generation, state, destination, created_at, updated_at) VALUES (NULL, 0, 'cancelled', ?, 1, 1)",
                       [.text(Self.secretURL + "/" + String(repeating: "x", count: 3000))])
            try db.run("DELETE FROM upload_jobs WHERE state = 'cancelled'")
        }
        #expect(fileText(library).contains(Self.token), "the older store holds the secret to begin with")

        let store = try library.open()
        #expect(try store.activeDestination() == Self.clean)
        #expect(try store.destinationCounts() == [AssetStore.DestinationCount(destination: Self.clean, uploaded: 1, unverified: 0, active: true)])
        #expect(try store.jobs(for: .acknowledge).map(\.destination) == [Self.clean])
        #expect(try store.jobs(for: .acknowledge).first?.resumeURL == "http://127.0.0.1:8080/Photo%20Uploads/Inbox/abc")
        #expect(try store.useDestination(Self.clean, allowChange: false).previous == nil)
        store.checkpoint()
        expectNoSecret(fileText(library))
    }

    /// An S3 destination recorded before its identity named the endpoint (`s3://photos/c`) is
    /// taken by the first run naming the same bucket and prefix, marks and all.
    @Test func aBareS3DestinationIsAdoptedByItsIdentity() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let store = try library.open()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) { #expect(try store.bankVerdict(TemporaryLibrary.verdict(), for: asset)) }
        try store.useDestination("s3://photos/c", allowChange: false)
        for asset in try store.claimForUpload(limit: 10) { #expect(try store.recordUploaded(asset, serverID: "k")) }
        try store.releaseClaims()
        let identity = "s3://photos/c at http://127.0.0.1:9000"
        let use = try store.useDestination(identity, formerly: "s3://photos/c", allowChange: false)
        #expect(use.previous == nil && use.alreadyThere == 1)
        #expect(try store.activeDestination() == identity)
        #expect(try store.destinationCounts().map(\.destination) == [identity])
        // From then on another endpoint is another destination.
        let error = try #require(throws: StoreError.self) {
            try store.useDestination("s3://photos/c at http://127.0.0.1:9001", formerly: "s3://photos/c", allowChange: false)
        }
        #expect(error.code == .destinationChanged)
    }
}
