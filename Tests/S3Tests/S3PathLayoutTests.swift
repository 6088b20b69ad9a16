import Foundation
import Testing
import SystemSupport
import Transfer

/// `serve --store s3://… --layout path` (issue 35 item 1): objects' bytes under `files/<library
/// path>` in the bucket, a name never replaced (another content at a taken path gets
/// `~<12 hex of its SHA-256>`), the same content at another path deduplicated, the bytes served
/// from their key by any instance, and none left under `objects/<id>`.
@Suite(.serialized) struct S3PathLayoutTests {
    /// A library folder with `files` (relative path, bytes), and its store's path.
    static func library(_ files: [(String, [UInt8])]) throws -> (root: URL, library: String, store: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("s3path-\(UUID().uuidString)")
        let library = root.appendingPathComponent("library").path
        for (path, bytes) in files {
            let url = URL(fileURLWithPath: library + "/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }
        return (root, library, root.appendingPathComponent("store.sqlite").path)
    }

    static func sha256Hex(_ bytes: [UInt8]) throws -> String {
        try SHA256.hex(SHA256.digest(bytes))
    }

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 6364136223846793005 &+ 1442695040888963407
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    @Test func objectsLandUnderTheirLibraryPathsAndNeverReplaceOneAnother() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let fleet = "s3://\(bucket.configuration.bucket)/paths"
        let instances = [try S3ServeInstance(store: fleet, moto: moto, arguments: ["--layout", "path"]),
                         try S3ServeInstance(store: fleet, moto: moto, arguments: ["--layout", "path"])]
        let photo = Self.random(40_000, seed: 1), other = Self.random(50_000, seed: 2)
        // Over the 5 MiB part size: sent in parts, completed as a multipart upload, then copied.
        let large = Self.random(7_500_000, seed: 3)
        let first = try Self.library([("2024/IMG_0001.jpg", photo), ("2024/big.jpg", large)])
        // Another device: another content at the same path, and the first photo at another path.
        let second = try Self.library([("2024/IMG_0001.jpg", other), ("copies/same.jpg", photo)])
        defer { try? FileManager.default.removeItem(at: first.root); try? FileManager.default.removeItem(at: second.root) }

        for (library, instance) in [(first, instances[0]), (second, instances[1])] {
            let run = try await S3CLITests.run(["drain", library.library, "--store", library.store, "--to", instance.url + "/uploads",
                                                "--analysis-size", "96"], aws: [:])
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        }

        let keys = try await S3CLITests.keys(bucket, prefix: "paths/")
        let files = keys.filter { $0.hasPrefix("paths/files/") }.sorted()
        let otherSuffix = "~" + String(try Self.sha256Hex(other).prefix(12))
        #expect(files == ["paths/files/2024/IMG_0001.jpg", "paths/files/2024/IMG_0001\(otherSuffix).jpg", "paths/files/2024/big.jpg"],
                "\(keys)")
        // Nothing left under the ids but sidecars; a name claim per placed object.
        #expect(keys.filter { $0.hasPrefix("paths/objects/") && !$0.hasSuffix(".json") }.isEmpty, "\(keys)")
        #expect(keys.filter { $0.hasPrefix("paths/names/") }.count == 3, "\(keys)")

        // Each key holds its photo's bytes, and either instance serves them by object id.
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(S3ServeTests.curl(["-s", instances[1].url + "/objects"]).utf8))
            as? [[String: Any]])
        #expect(listed.count == 3, "\(listed)")
        for (bytes, key) in [(photo, "files/2024/IMG_0001.jpg"), (other, "files/2024/IMG_0001\(otherSuffix).jpg"), (large, "files/2024/big.jpg")] {
            let stored = try await bucket.send("GET", key: "paths/" + key)
            #expect(stored.status == 200 && stored.body == bytes, "\(key)")
            let sha = try Self.sha256Hex(bytes)
            let object = try #require(listed.first { $0["sha256"] as? String == sha })
            let id = try #require(object["id"] as? String)
            #expect(try S3ServeTests.download(instances[0].url + "/objects/\(id)/content") == Data(bytes), "\(key)")
        }
    }
}
