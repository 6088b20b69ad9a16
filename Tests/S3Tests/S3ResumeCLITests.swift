import FaultProxy
import Foundation
import Synchronization
import Testing
@testable import Transfer

/// `photodrain upload --to s3://…` killed in the middle of a multipart
/// upload resumes it in the next run (ListParts), sending only the parts S3 does not hold.
@Suite struct S3ResumeCLITests {
    /// Whether the proxy slows new connections down.
    final class Throttle: Sendable {
        let on = Mutex(true)
    }

    @Test func aKilledMultipartUploadResumesInTheNextRun() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        // The first run's bytes go slowly through the proxy, the second run's at full speed.
        let throttle = Throttle()
        let proxy = try FaultProxy(targetPort: moto.port, plan: FaultPlan { _ in
            throttle.on.withLock { $0 } ? .delay(milliseconds: 4) : nil
        })
        defer { proxy.stop() }
        let size = 24 * 1024 * 1024  // three 8 MiB parts
        let file = try TestFile(size: size, seed: 22, name: "VID_0022.mov")
        defer { file.remove() }
        let state = (file.path as NSString).deletingLastPathComponent + "/state"
        let records = state + "/photodrain/uploads"
        let arguments = ["upload", file.path, "--to", "s3://\(bucket.configuration.bucket)/resume",
                         "--s3-endpoint", "http://127.0.0.1:\(proxy.port)", "--json"]
        var aws = S3CLITests.environment(moto)
        aws["XDG_STATE_HOME"] = state

        // Killed once S3 has acknowledged two of the three parts (the checkpoint says so).
        let first = Process()
        first.executableURL = S3CLITests.binary
        first.arguments = arguments
        first.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") }.merging(aws) { $1 }
        first.standardOutput = FileHandle.nullDevice
        first.standardError = FileHandle.nullDevice
        try first.run()
        let deadline = Date().addingTimeInterval(40)
        var confirmed = 0
        while confirmed < 16 * 1024 * 1024 && first.isRunning && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
            confirmed = Self.confirmedOffset(in: records) ?? 0
        }
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        #expect(first.terminationReason == .uncaughtSignal, "the first run ended before it was killed")
        #expect(confirmed >= 16 * 1024 * 1024, "S3 had confirmed only \(confirmed) bytes after 40 s")

        throttle.on.withLock { $0 = false }
        let second = try await S3CLITests.run(arguments, aws: aws)
        #expect(second.status == 0, "\(second.stdout) \(second.stderr)")
        let row = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        let resumedFrom = try #require(row["resumedFrom"] as? Int, "not resumed: \(row)")
        #expect(resumedFrom >= confirmed && resumedFrom % (8 * 1024 * 1024) == 0)
        #expect(row["bytes"] as? Int == size - resumedFrom, "\(row)")
        #expect(row["confirmedBytes"] as? Int == size)

        let sha = try FileDigest.sha256Hex(path: file.path)
        let object = try await bucket.send("GET", key: "resume/\(sha)-VID_0022.mov")
        #expect(object.status == 200)
        #expect(object.body == file.bytes)
        #expect(Self.confirmedOffset(in: records) == nil, "the finished upload's checkpoint was kept")
    }

    /// The confirmed offset of the one record in `folder`, or nil when there is none.
    private static func confirmedOffset(in folder: String) -> Int? {
        guard let name = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).first(where: { $0.hasSuffix(".json") }),
              let data = FileManager.default.contents(atPath: folder + "/" + name),
              let record = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return record["confirmedOffset"] as? Int
    }
}
