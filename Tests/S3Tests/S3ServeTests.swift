import Foundation
import Testing
@testable import Transfer

/// `photodrain serve --store s3://…`: several real `serve` processes on one moto bucket, driven
/// with curl as a client would drive any resumable-upload server. Each instance keeps nothing of
/// an upload between requests, so whichever instance a request reaches answers it from the bucket.
@Suite struct S3ServeTests {
    static let version = ["-H", "Upload-Draft-Interop-Version: 8"]
    static let partial = ["-H", "Content-Type: application/partial-upload"]

    /// An upload cut on one instance (the client's connection dies mid-PATCH, the instance lives
    /// on) is resumed on another from the offset that one reads from the bucket: the parts the
    /// first committed and the tail it saved at the cut. The object is the client's bytes exactly.
    @Test func uploadCutOnOneInstanceResumesOnAnother() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/fleet"
        let first = try S3ServeInstance(store: store, moto: moto)
        let second = try S3ServeInstance(store: store, moto: moto)
        let file = try TestFile(size: 12_000_000, seed: 351)
        defer { file.remove() }
        let sent = 8_000_000

        let id = try Self.create(on: first)
        // A PATCH announcing every byte whose client sends 8 MB of them and goes away.
        let body = Pipe()
        let append = Process()
        append.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        append.arguments = ["-s", "-o", "/dev/null", "-X", "PATCH", "-T", "-", "-H", "Expect:", "-H", "Transfer-Encoding:",
                            "-H", "Content-Length: \(file.bytes.count)", "-H", "Upload-Offset: 0", "-H", "Upload-Complete: ?1"]
            + Self.partial + Self.version + [first.url + "/uploads/\(id)"]
        append.standardInput = body
        try append.run()
        defer { Self.stop(append) }
        try body.fileHandleForWriting.write(contentsOf: Data(file.bytes[..<sent]))
        #expect(try Self.waitForOffset(atLeast: 5 * 1024 * 1024, id: id, on: second))
        Self.stop(append)
        // The cut instance keeps what arrived after the part as the upload's tail.
        #expect(try Self.waitForOffset(atLeast: sent, id: id, on: second))

        let offset = try Self.offset(id, on: second)
        #expect(offset == sent)
        let objectID = try Self.finish(id, from: offset, file: file, on: second)
        #expect(try await Self.stored(objectID, in: bucket) == file.bytes)
        // The first instance answers for the upload as the second left it.
        let head = try Self.curl(["-s", "-I"] + Self.version + [first.url + "/uploads/\(id)"])
        #expect(head.lowercased().contains("upload-complete: ?1"), "\(head)")
        #expect(head.lowercased().contains("x-server-resource-id: \(objectID)"), "\(head)")
    }

    /// An instance SIGKILLed mid-PATCH: another answers the offset of the parts it committed, the
    /// upload resumes there, and the object is byte-identical.
    @Test func instanceKilledMidPatchLeavesTheUploadToAnother() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/killed"
        let doomed = try S3ServeInstance(store: store, moto: moto)
        let survivor = try S3ServeInstance(store: store, moto: moto)
        let file = try TestFile(size: 13_000_000, seed: 352)
        defer { file.remove() }

        let id = try Self.create(on: survivor)
        let append = try Self.curlProcess(["-s", "-o", "/dev/null", "--limit-rate", "2M", "-X", "PATCH", "-H", "Expect:",
                                           "--data-binary", "@" + file.path, "-H", "Upload-Offset: 0", "-H", "Upload-Complete: ?1"]
                                          + Self.partial + Self.version + [doomed.url + "/uploads/\(id)"])
        defer { Self.stop(append) }
        #expect(try Self.waitForOffset(atLeast: 5 * 1024 * 1024, id: id, on: survivor))
        doomed.kill()
        append.waitUntilExit()

        let offset = try Self.offset(id, on: survivor)
        #expect(offset > 0 && offset % (5 * 1024 * 1024) == 0, "parts only: the killed instance saved no tail")
        let objectID = try Self.finish(id, from: offset, file: file, on: survivor)
        #expect(try await Self.stored(objectID, in: bucket) == file.bytes)
    }

    /// Two instances PATCH one upload at once: one request takes it and stores the object, the
    /// other answers 409; the object is the client's bytes.
    @Test func twoInstancesRacingOnOneUploadOneWins() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/race"
        let instances = [try S3ServeInstance(store: store, moto: moto), try S3ServeInstance(store: store, moto: moto)]
        let file = try TestFile(size: 7_000_000, seed: 353)
        defer { file.remove() }

        let id = try Self.create(on: instances[0])
        let appends = try instances.map { instance in
            try Self.curlProcess(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--limit-rate", "3M", "-X", "PATCH", "-H", "Expect:",
                                  "--data-binary", "@" + file.path, "-H", "Upload-Offset: 0", "-H", "Upload-Complete: ?1"]
                                 + Self.partial + Self.version + [instance.url + "/uploads/\(id)"])
        }
        let statuses = appends.map { append in
            append.waitUntilExit()
            return String(decoding: (append.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        }
        #expect(statuses.sorted() == ["201", "409"], "\(statuses)")
        let head = try Self.curl(["-s", "-I"] + Self.version + [instances[1].url + "/uploads/\(id)"])
        let objectLine = try #require(head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-server-resource-id:") })
        let objectID = String(objectLine.split(separator: ":")[1]).trimmingCharacters(in: .whitespaces)
        #expect(try await Self.stored(objectID, in: bucket) == file.bytes)
    }

    /// Two uploads of one photo (same idempotency key, same bytes) completing on two instances at
    /// once: both answer with one object, and the store holds one. Each instance pauses between
    /// its object's sidecar and the dedupe index, so both have stored a copy before either claims
    /// the index: the index's conditional write alone decides which copy stays.
    @Test func twoInstancesRacingOnOneDigestStoreOneObject() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/dedupe"
        let pause = ["PHOTODRAIN_SERVE_S3_INDEX_PAUSE": "1.5"]
        let instances = [try S3ServeInstance(store: store, moto: moto, environment: pause),
                         try S3ServeInstance(store: store, moto: moto, environment: pause)]
        let file = try TestFile(size: 6_000_000, seed: 354)
        defer { file.remove() }
        let sha = try FileDigest.sha256Hex(path: file.path)

        let creations = try instances.map { instance in
            try Self.curlProcess(["-s", "-i", "-X", "POST", "-H", "Expect:", "--data-binary", "@" + file.path, "-H", "Upload-Complete: ?1",
                                  "-H", "Idempotency-Key: \(sha)"] + Self.version + [instance.url + "/uploads"])
        }
        let answers = creations.map { creation in
            creation.waitUntilExit()
            return String(decoding: (creation.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        }
        let ids = answers.map { answer in
            answer.split(separator: "\r\n").last { $0.lowercased().hasPrefix("x-server-resource-id:") }
                .map { String($0.split(separator: ":")[1]).trimmingCharacters(in: .whitespaces) }
        }
        #expect(ids[0] != nil && ids[0] == ids[1], "\(answers)")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(Self.curl(["-s", instances[1].url + "/objects"]).utf8)) as? [[String: Any]])
        #expect(listed.count == 1)
        #expect(listed.first?["sha256"] as? String == sha)
        let objects = try await S3CLITests.keys(bucket, prefix: "dedupe/objects/").filter { !$0.hasSuffix(".json") }
        #expect(objects.count == 1, "\(objects)")
        #expect(try await Self.stored(try #require(ids[0]), in: bucket) == file.bytes)
    }

    /// An upload under a part's size is one PutObject: no multipart upload, no tail left, and
    /// every instance answers its whole length as its offset once complete.
    @Test func smallUploadIsOnePutAndAnswersItsLength() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/small"
        let instances = [try S3ServeInstance(store: store, moto: moto), try S3ServeInstance(store: store, moto: moto)]
        let file = try TestFile(size: 300_000, seed: 358)
        defer { file.remove() }

        let id = try Self.create(on: instances[0])
        let half = file.path + ".half"
        try Data(file.bytes[..<100_000]).write(to: URL(fileURLWithPath: half))
        let first = try Self.curl(["-s", "-i", "-X", "PATCH", "-H", "Expect:", "--data-binary", "@" + half, "-H", "Upload-Offset: 0",
                              "-H", "Upload-Complete: ?0"] + Self.partial + Self.version + [instances[1].url + "/uploads/\(id)"])
        #expect(first.hasPrefix("HTTP/1.1 204"), "\(first)")
        let objectID = try Self.finish(id, from: 100_000, file: file, on: instances[0])
        #expect(try await Self.stored(objectID, in: bucket) == file.bytes)
        for instance in instances {
            let head = try Self.curl(["-s", "-I"] + Self.version + [instance.url + "/uploads/\(id)"]).lowercased()
            #expect(head.contains("upload-offset: 300000\r\n") && head.contains("upload-complete: ?1"), "\(head)")
        }
        #expect(try await S3CLITests.keys(bucket, prefix: "small/uploads/") == ["small/uploads/\(id).json"], "no tail left")
        #expect(try await S3ServeSweepTests.multipartUploads(bucket).isEmpty)
    }

    /// The real client (`photodrain upload`, with its proof of receipt) through one instance and
    /// then the other: each photo is stored once, byte-identical, the second run's uploads are
    /// answered with the first run's objects, and either instance serves the bytes.
    @Test func clientUploadsThroughEitherInstance() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let store = "s3://\(bucket.configuration.bucket)/client"
        let instances = [try S3ServeInstance(store: store, moto: moto), try S3ServeInstance(store: store, moto: moto)]
        let big = try TestFile(size: 7_500_000, seed: 356, name: "VID_0001.mov")
        let small = try TestFile(size: 40_000, seed: 357, name: "IMG_0002.jpg")
        defer { big.remove(); small.remove() }

        var runs: [S3CLITests.Output] = []
        for instance in instances {
            let run = try await S3CLITests.run(["upload", big.path, small.path, "--to", instance.url + "/uploads"], aws: [:])
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            runs.append(run)
        }
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(Self.curl(["-s", instances[0].url + "/objects"]).utf8)) as? [[String: Any]])
        #expect(listed.count == 2, "\(listed)")
        for file in [big, small] {
            let sha = try FileDigest.sha256Hex(path: file.path)
            let object = try #require(listed.first { $0["sha256"] as? String == sha })
            #expect(try await Self.stored(try #require(object["id"] as? String), in: bucket) == file.bytes)
            // Either instance serves its bytes, streamed from the bucket.
            let content = try Self.download(instances[1].url + "/objects/\(object["id"] as? String ?? "?")/content")
            #expect(content == Data(file.bytes))
            // Both runs name the one object.
            #expect(runs.allSatisfy { $0.stdout.contains("uploaded as \(object["id"] as? String ?? "?")") }, "\(runs.map(\.stdout))")
        }
    }

    // MARK: Helpers

    /// Creates an empty upload of unknown length; its id.
    static func create(on instance: S3ServeInstance) throws -> String {
        let created = try curl(["-s", "-i", "-X", "POST", "--data-binary", "", "-H", "Upload-Complete: ?0"] + version + [instance.url + "/uploads"])
        let location = try #require(created.split(separator: "\r\n").last { $0.lowercased().hasPrefix("location:") }, "\(created)")
        return try #require(location.split(separator: "/").last.map { String($0).trimmingCharacters(in: .whitespaces) })
    }

    /// The offset an instance reports for an upload (HEAD).
    static func offset(_ id: String, on instance: S3ServeInstance) throws -> Int {
        let head = try curl(["-s", "-I"] + version + [instance.url + "/uploads/\(id)"])
        let line = try #require(head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("upload-offset:") }, "\(head)")
        return try #require(Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)))
    }

    /// Polls HEAD until the upload's offset reaches `bytes` (false after a minute).
    static func waitForOffset(atLeast bytes: Int, id: String, on instance: S3ServeInstance) throws -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try offset(id, on: instance) >= bytes { return true }
            usleep(100_000)
        }
        return false
    }

    /// PATCHes the rest of `file` from `offset` as the completing append; the object's id.
    static func finish(_ id: String, from offset: Int, file: TestFile, on instance: S3ServeInstance) throws -> String {
        let rest = file.path + ".rest"
        try Data(file.bytes[offset...]).write(to: URL(fileURLWithPath: rest))
        let finished = try curl(["-s", "-i", "-X", "PATCH", "-H", "Expect:", "--data-binary", "@" + rest, "-H", "Upload-Offset: \(offset)",
                                 "-H", "Upload-Complete: ?1"] + partial + version + [instance.url + "/uploads/\(id)"])
        #expect(finished.hasPrefix("HTTP/1.1 201"), "\(finished)")
        let line = try #require(finished.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-server-resource-id:") }, "\(finished)")
        return String(line.split(separator: ":")[1]).trimmingCharacters(in: .whitespaces)
    }

    /// An object's bytes as the bucket holds them.
    static func stored(_ objectID: String, in bucket: S3Uploader) async throws -> [UInt8] {
        let prefix = try await S3CLITests.keys(bucket, prefix: "").first { $0.hasSuffix("/objects/\(objectID)") }
        let response = try await bucket.send("GET", key: try #require(prefix))
        #expect(response.status == 200)
        return response.body
    }

    /// Ends a process with SIGKILL (a test thread's children may inherit a mask that blocks SIGTERM).
    static func stop(_ process: Process) {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    static func curlProcess(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["--max-time", "60"] + arguments
        process.standardOutput = Pipe()
        try process.run()
        return process
    }

    /// The body of a GET (curl fails, and this gives nothing, on a body cut short).
    static func download(_ url: String) throws -> Data {
        let process = try curlProcess(["-s", "-f", url])
        let data = (process.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? data : Data()
    }

    static func curl(_ arguments: [String]) throws -> String {
        let process = try curlProcess(arguments)
        let data = (process.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

/// One `photodrain serve --store s3://…` on a free port, with moto's credentials; killed (SIGTERM,
/// or SIGKILL by `kill()`) when the test lets go of it.
final class S3ServeInstance {
    let process = Process()
    /// `http://127.0.0.1:PORT`.
    let url: String
    /// Where its standard error (the request log, the account mirror's messages) goes.
    let logPath: String

    /// The last `lines` lines of its log, for a failing test's message.
    func logTail(_ lines: Int = 30) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    init(store: String, moto: MotoServer, arguments: [String] = [], environment extra: [String: String] = [:]) throws {
        process.executableURL = S3CLITests.binary
        process.arguments = ["serve", "--store", store, "--s3-endpoint", "http://127.0.0.1:\(moto.port)", "--port", "0"] + arguments
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") }
        environment["HOME"] = "/nonexistent"
        environment.merge(S3CLITests.environment(moto)) { $1 }
        environment.merge(extra) { $1 }
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        // The request log goes to a file (a pipe nobody drains would fill and stall the server).
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("s3serve-\(UUID().uuidString).log").path
        FileManager.default.createFile(atPath: log, contents: nil)
        logPath = log
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // The first line names the port: "photodrain serve: uploads at http://HOST:PORT/uploads, …".
        var line = Data()
        while let byte = try out.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data([0x0A]) { line.append(byte) }
        let text = String(decoding: line, as: UTF8.self)
        guard let start = text.range(of: "http://"), let end = text.range(of: "/uploads") else {
            S3ServeTests.stop(process)
            throw MotoError("serve printed no address: '\(text)'")
        }
        url = String(text[start.lowerBound..<end.lowerBound])
    }

    func kill() {
        S3ServeTests.stop(process)
    }

    deinit {
        S3ServeTests.stop(process)
    }
}
