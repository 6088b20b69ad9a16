import Foundation
import Testing
@testable import AssetStore

/// Store migration 12: a finished job's server id is a column of its own. A store written before
/// kept it only in the job's response headers (`x-server-resource-id`); acknowledging such a job
/// after the upgrade still records the id on the photo's upload mark.
@Suite struct JobServerIDMigrationTests {
    @Test func aJobFinishedBeforeTheUpgradeKeepsItsServerID() throws {
        let library = try TemporaryLibrary()
        try library.write("a.jpg")
        let destination = "http://127.0.0.1:8080/uploads"
        do {
            let db = try Database(path: library.storePath)
            for version in 0..<11 {
                try db.execute(Schema.migrations[version])
                try db.execute("PRAGMA user_version = \(version + 1)")
            }
            let root = try #require(FileTree.realPath(library.libraryPath))
            try db.run("INSERT INTO meta(key, value) VALUES ('root', ?), ('destination', ?)", [.text(root), .text(destination)])
            try db.run("""
                INSERT INTO assets(id, path, size, mtime_ns, sha256, discovered_at, analyzed_at)
                VALUES (1, 'a.jpg', 5, 1, 'ab', 1, 1), (2, 'b.jpg', 5, 1, 'cd', 1, 1)
                """)
            try db.run("""
                INSERT INTO upload_jobs(asset_id, asset_generation, state, destination, response_status, response_headers, proof, created_at, updated_at)
                VALUES (1, 0, 'succeeded', ?, 201, '{"location":"/uploads/7","x-server-resource-id":"obj-7"}', 'verified', 1, 1),
                       (2, 0, 'failed', ?, 503, '{"x-server-resource-id":"not-a-success"}', NULL, 1, 1)
                """, [.text(destination), .text(destination)])
        }
        let store = try library.open()
        let jobs = try store.jobs(for: .acknowledge).sorted { $0.id < $1.id }
        #expect(jobs.map(\.serverID) == ["obj-7", nil])
        let succeeded = try #require(jobs.first)
        try store.acknowledgeJob(succeeded) { job, _ in .uploaded(serverID: job.serverID) }
        let marks = try store.uploadedAssets(to: destination)
        #expect(marks.map(\.serverID) == ["obj-7"])
    }
}
