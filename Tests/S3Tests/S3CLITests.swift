import Foundation
import Synchronization
import Testing
@testable import Transfer

/// The built `photodrain` against moto: `upload`, `drain` and `wake` + `agent` take
/// `--to s3://…` like any other destination; credentials come from the AWS environment only.
@Suite struct S3CLITests {
    struct Output: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The binary SwiftPM built beside this test bundle.
    static var binary: URL {
        var dir = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("photodrain").path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("photodrain")
    }

    /// Runs `photodrain arguments...` on a thread of its own with the AWS variables given (and no
    /// others from this environment) and stdin closed.
    static func run(_ arguments: [String], aws: [String: String]) async throws -> Output {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Output, any Error>) in
            Thread.detachNewThread {
                let process = Process()
                process.executableURL = binary
                process.arguments = arguments
                var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") }
                environment["HOME"] = "/nonexistent"
                environment.merge(aws) { $1 }
                process.environment = environment
                let out = Pipe(), err = Pipe()
                process.standardOutput = out
                process.standardError = err
                process.standardInput = FileHandle.nullDevice
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let errorData = Mutex(Data())
                let reader = Thread { errorData.withLock { $0 = err.fileHandleForReading.readDataToEndOfFile() } }
                reader.start()
                let outData = out.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                while !reader.isFinished { usleep(1000) }
                continuation.resume(returning: Output(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                                                      stderr: errorData.withLock { String(decoding: $0, as: UTF8.self) }))
            }
        }
    }

    static func environment(_ moto: MotoServer) -> [String: String] {
        ["AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey]
    }

    /// Every object in the bucket under `prefix`, by key. (Filtered here: moto mis-verifies the
    /// signature of a `prefix` query value holding `/`.)
    static func keys(_ bucket: S3Uploader, prefix: String) async throws -> [String] {
        let listing = try await bucket.send("GET", key: nil, query: [("list-type", "2")])
        #expect(listing.status == 200)
        let text = Substring(String(decoding: listing.body, as: UTF8.self))
        return S3XML.elements("Contents", in: text).compactMap { S3XML.value("Key", in: $0) }.filter { $0.hasPrefix(prefix) }
    }

    @Test func uploadCommandSendsAFileToS3() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let file = try TestFile(size: 70_000, seed: 70, name: "IMG_0070.jpg")
        defer { file.remove() }
        let destination = "s3://\(bucket.configuration.bucket)/cli/upload"
        let endpoint = "http://127.0.0.1:\(moto.port)"
        let verdict = #"{"label":"keep","faces":[]}"#
        let result = try await Self.run(["upload", file.path, "--to", destination, "--s3-endpoint", endpoint,
                                         "--verdict", verdict, "--json"], aws: Self.environment(moto))
        #expect(result.status == 0, "\(result.stderr)")
        let row = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let sha = try FileDigest.sha256Hex(path: file.path)
        let serverID = try #require(row["serverID"] as? String)
        #expect(serverID.hasPrefix("cli/upload/\(sha)-IMG_0070.jpg "))
        let object = try await bucket.send("GET", key: "cli/upload/\(sha)-IMG_0070.jpg")
        #expect(object.body == file.bytes)
        #expect(object.headers[S3Metadata.verdictHeader] == verdict)
    }

    @Test func badCredentialsFailPermanentlyWithoutShowingTheSecret() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let file = try TestFile(size: 1000, seed: 71)
        defer { file.remove() }
        let secret = "Zm9vYmFyYmF6cXV4-wrong-secret"
        let arguments = ["upload", file.path, "--to", "s3://\(bucket.configuration.bucket)/x", "--s3-endpoint", "http://127.0.0.1:\(moto.port)"]
        let wrong = try await Self.run(arguments, aws: ["AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": secret])
        #expect(wrong.status == 1)
        #expect(wrong.stdout.contains("unauthorized (permanent)"), "\(wrong.stdout)")
        #expect(!(wrong.stdout + wrong.stderr).contains(secret))
        let none = try await Self.run(arguments, aws: [:])
        #expect(none.status == 64)
        #expect(none.stderr.contains("no S3 credentials"))
    }

    /// A library of the sample photos drained to S3: one object per photo, keyed by content hash,
    /// each with its verdict, and the row's server id naming the object and its ETag.
    @Test func drainAndWakeWithAgentUploadTheLibrary() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("s3cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let photos = ["chelsea.jpg", "astronaut-orientation-3.jpg", "camera.png"]
        for library in ["a", "b"] {
            let directory = root.appendingPathComponent(library)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for photo in photos {
                try FileManager.default.copyItem(at: Self.repository.appendingPathComponent("SampleImages/\(photo)"),
                                                 to: directory.appendingPathComponent(photo))
            }
        }
        let endpoint = ["--s3-endpoint", "http://127.0.0.1:\(moto.port)"]
        let fast = ["--analysis-size", "96"]
        let aws = Self.environment(moto)

        let drainTo = "s3://\(bucket.configuration.bucket)/drain"
        let drain = try await Self.run(["drain", root.appendingPathComponent("a").path, "--store", root.appendingPathComponent("a.sqlite").path,
                                        "--to", drainTo, "--json"] + endpoint + fast, aws: aws)
        #expect(drain.status == 0, "\(drain.stderr)")
        let drained = try await Self.keys(bucket, prefix: "drain/")
        #expect(drained.count == photos.count)
        let verdicts = try await Self.run(["verdicts", root.appendingPathComponent("a").path, "--store", root.appendingPathComponent("a.sqlite").path], aws: [:])
        for line in verdicts.stdout.split(separator: "\n") {
            let row = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let serverID = try #require(row["server_id"] as? String)
            let key = String(serverID.prefix { $0 != " " })
            #expect(drained.contains(key))
            #expect(key.hasPrefix("drain/\(row["sha256"] as? String ?? "?")-"))
            let head = try await bucket.send("HEAD", key: key)
            #expect(head.headers[S3Metadata.verdictHeader]?.contains("\"label\"") == true)
        }

        let library = root.appendingPathComponent("b").path
        let store = root.appendingPathComponent("b.sqlite").path
        let wakeTo = "s3://\(bucket.configuration.bucket)/wake"
        var statuses: [Int32] = []
        for _ in 0..<6 {
            // wake names the endpoint its jobs go to (a destination is its endpoint too).
            let wake = try await Self.run(["wake", library, "--store", store, "--to", wakeTo] + endpoint + fast, aws: [:])
            statuses.append(wake.status)
            if wake.status != 75 { break }
            let agent = try await Self.run(["agent", library, "--store", store, "--exit-when-idle", "0.5"] + endpoint, aws: aws)
            #expect(agent.status == 0, "\(agent.stderr)")
        }
        #expect(statuses.last == 0, "wake statuses: \(statuses)")
        #expect(try await Self.keys(bucket, prefix: "wake/").count == photos.count)
    }
}
