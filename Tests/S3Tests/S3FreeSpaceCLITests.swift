import Foundation
import Testing

/// `free-space` and `restore` against an S3-compatible store (moto), issue 33: photos proven in
/// the bucket and read back with `--deep` are deleted, and come back by their keys byte for byte;
/// an object overwritten with other bytes since never takes its photo's place.
@Suite(.serialized) struct S3FreeSpaceCLITests {
    private static let photos = ["chelsea.jpg", "astronaut-orientation-3.jpg", "camera.png"]

    @Test func deletedPhotosComeBackFromTheirKeysAndOtherBytesNever() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("s3free-\(UUID().uuidString)")
        let library = root.appendingPathComponent("library").path
        let store = root.appendingPathComponent("store.sqlite").path
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        for photo in Self.photos {
            try FileManager.default.copyItem(atPath: S3CLITests.repository.appendingPathComponent("SampleImages/\(photo)").path,
                                             toPath: library + "/" + photo)
        }
        let aws = S3CLITests.environment(moto)
        let to = "s3://\(bucket.configuration.bucket)/c"
        let drained = try await S3CLITests.run(["drain", library, "--store", store, "--to", to, "--s3-endpoint",
                                                "http://127.0.0.1:\(moto.port)", "--analysis-size", "96"], aws: aws)
        #expect(drained.status == 0, "\(drained.stderr)")

        let freed = try await S3CLITests.run(["free-space", library, "--store", store, "--older-than", "0", "--max-fraction", "100%",
                                              "--deep", "--delete", "--yes"], aws: aws)
        #expect(freed.status == 0, "stdout: \(freed.stdout) stderr: \(freed.stderr)")
        for photo in Self.photos { #expect(!FileManager.default.fileExists(atPath: library + "/" + photo), "\(photo) stayed: \(freed.stdout)") }

        // One object is overwritten with other bytes of the same length after the removal.
        let keys = try await S3CLITests.keys(bucket, prefix: "c/")
        let key = try #require(keys.first { $0.hasSuffix("-chelsea.jpg") }, "\(keys)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: S3CLITests.repository
            .appendingPathComponent("SampleImages/chelsea.jpg").path)[.size] as? Int)
        let overwrite = try await bucket.send("PUT", key: key, body: .bytes([UInt8](repeating: 0x42, count: size)))
        #expect(overwrite.status == 200)

        let restored = try await S3CLITests.run(["restore", library, "--store", store, "--json"], aws: aws)
        #expect(restored.status == 1, "stdout: \(restored.stdout) stderr: \(restored.stderr)")
        #expect(restored.stdout.contains("not the photo's bytes"), "\(restored.stdout)")
        #expect(!FileManager.default.fileExists(atPath: library + "/chelsea.jpg"))
        for photo in Self.photos where photo != "chelsea.jpg" {
            let original = try Data(contentsOf: S3CLITests.repository.appendingPathComponent("SampleImages/\(photo)"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: library + "/" + photo)) == original, "\(photo) is not back byte for byte")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: library).filter { $0.hasPrefix(".photodrain-restore-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}

/// `free-space` and `restore` through a fleet (issue 35): photos drained through one `serve --store`
/// instance, proven and read back (`--deep`) through it, deleted, and restored through another
/// instance on the same bucket, byte for byte.
@Suite(.serialized) struct S3FleetRestoreCLITests {
    @Test func photosFreedThroughOneInstanceComeBackThroughAnother() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let fleet = "s3://\(bucket.configuration.bucket)/fleet"
        let first = try S3ServeInstance(store: fleet, moto: moto)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("s3fleet-\(UUID().uuidString)")
        let library = root.appendingPathComponent("library").path
        let store = root.appendingPathComponent("store.sqlite").path
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let photos = ["chelsea.jpg", "camera.png"]
        for photo in photos {
            try FileManager.default.copyItem(atPath: S3CLITests.repository.appendingPathComponent("SampleImages/\(photo)").path,
                                             toPath: library + "/" + photo)
        }
        let drained = try await S3CLITests.run(["drain", library, "--store", store, "--to", first.url + "/uploads",
                                                "--analysis-size", "96"], aws: [:])
        #expect(drained.status == 0, "\(drained.stderr)")
        let freed = try await S3CLITests.run(["free-space", library, "--store", store, "--older-than", "0", "--max-fraction", "100%",
                                              "--deep", "--delete", "--yes"], aws: [:])
        #expect(freed.status == 0, "stdout: \(freed.stdout) stderr: \(freed.stderr)")
        for photo in photos { #expect(!FileManager.default.fileExists(atPath: library + "/" + photo), "\(photo) stayed: \(freed.stdout)") }

        // The instance the photos went through is gone; another on the same bucket answers for them.
        first.kill()
        let second = try S3ServeInstance(store: fleet, moto: moto)
        // The store names the first instance's address: the restore is pointed at the second.
        let restored = try await S3CLITests.run(["restore", library, "--store", store, "--to", second.url + "/uploads", "--json"], aws: [:])
        #expect(restored.status == 0, "stdout: \(restored.stdout) stderr: \(restored.stderr)")
        for photo in photos {
            let original = try Data(contentsOf: S3CLITests.repository.appendingPathComponent("SampleImages/\(photo)"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: library + "/" + photo)) == original, "\(photo) is not back byte for byte")
        }
    }
}
