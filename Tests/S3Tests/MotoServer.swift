import UploadProtocol
import Foundation
import Testing
@testable import Transfer

/// A moto S3 emulator for the tests, started once per test process on a free loopback port, with
/// signature checking on: moto authenticates every request after its first
/// `INITIAL_NO_AUTH_ACTION_COUNT`, which are spent creating an IAM user with an allow-all policy
/// and an access key. Every S3 request the tests make is then verified against that key's secret.
/// moto comes from `Scripts/bootstrap` (a virtualenv at `.build/venv`); when it is missing or does
/// not start, the tests fail saying so — they never skip.
///
/// `@unchecked Sendable`: `process` is only held, to keep moto's stdin open; nothing touches it.
final class MotoServer: @unchecked Sendable {
    /// The loopback port moto listens on.
    let port: UInt16
    /// The access key moto's IAM issued.
    let credentials: S3Credentials
    private let process: Process

    private init(port: UInt16, credentials: S3Credentials, process: Process) {
        self.port = port
        self.credentials = credentials
        self.process = process
    }

    /// The one server of this test process.
    static func shared() async throws -> MotoServer { try await instance.value }
    private static let instance = Task { try await MotoServer.start() }

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The setup calls moto lets through unauthenticated (CreateUser, PutUserPolicy, CreateAccessKey).
    static let unauthenticatedSetupCalls = 3

    /// Starts moto and creates the IAM user and key.
    private static func start() async throws -> MotoServer {
        let python = try findPython()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        // Binds port 0 (the kernel picks a free one), prints it, and stops when stdin closes, so moto
        // ends with this test process however that ends.
        process.arguments = ["-c", """
            import sys
            from moto.server import ThreadedMotoServer
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            print(server.get_host_and_port()[1], flush=True)
            sys.stdin.read()
            server.stop()
            """]
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") && !$0.key.hasPrefix("MOTO_") }
        environment["INITIAL_NO_AUTH_ACTION_COUNT"] = String(unauthenticatedSetupCalls)
        process.environment = environment
        // moto's request log goes to a file: a pipe nobody drains would fill and stall the server.
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("moto-\(UUID().uuidString).log").path
        guard FileManager.default.createFile(atPath: logPath, contents: nil),
              let log = FileHandle(forWritingAtPath: logPath) else { throw MotoError("cannot create \(logPath)") }
        let output = Pipe(), input = Pipe()
        process.standardOutput = output
        process.standardError = log
        process.standardInput = input
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                let stderr = String(decoding: FileManager.default.contents(atPath: logPath) ?? Data(), as: UTF8.self)
                throw MotoError("moto exited before it listened: \(stderr.suffix(2000))")
            }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = UInt16(text), port > 0 else { throw MotoError("moto printed no port but '\(text)'") }
        let credentials = try await createAccessKey(port: port)
        return MotoServer(port: port, credentials: credentials, process: process)
    }

    /// `.build/venv/bin/python` from Scripts/bootstrap, else `PHOTODRAIN_MOTO_PYTHON`, else a
    /// `python3` on PATH that can import moto.
    private static func findPython() throws -> String {
        var candidates = [repository.appendingPathComponent(".build/venv/bin/python").path]
        if let override = ProcessInfo.processInfo.environment["PHOTODRAIN_MOTO_PYTHON"] { candidates.insert(override, at: 0) }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append("\(directory)/python3")
        }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            let probe = Process()
            probe.executableURL = URL(fileURLWithPath: candidate)
            probe.arguments = ["-c", "import moto.server"]
            probe.standardOutput = FileHandle.nullDevice
            probe.standardError = FileHandle.nullDevice
            guard (try? probe.run()) != nil else { continue }
            probe.waitUntilExit()
            if probe.terminationStatus == 0 { return candidate }
        }
        throw MotoError("no Python with moto found: run Scripts/bootstrap (it installs moto into .build/venv)")
    }

    /// CreateUser, PutUserPolicy (allow everything), CreateAccessKey through moto's IAM Query API.
    /// These are the unauthenticated calls; the signature only routes them to IAM.
    private static func createAccessKey(port: UInt16) async throws -> S3Credentials {
        let client = HTTPClient()
        guard let setup = S3Credentials(accessKeyID: "AKIASETUPONLY", secretAccessKey: "setup") else { throw MotoError("setup key") }
        let signer = SigV4Signer(credentials: setup, region: "us-east-1", service: "iam")
        let policy = #"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#
        var created: [UInt8] = []
        for form in [
            [("Action", "CreateUser"), ("UserName", "photodrain")],
            [("Action", "PutUserPolicy"), ("UserName", "photodrain"), ("PolicyName", "all"), ("PolicyDocument", policy)],
            [("Action", "CreateAccessKey"), ("UserName", "photodrain")],
        ] {
            let body = Array(((form + [("Version", "2010-05-08")]).map { "\($0.0)=\(SigV4Signer.uriEncode($0.1))" }
                .joined(separator: "&")).utf8)
            let hash = Hex.string(try FileDigest.sha256(bytes: body))
            var headers: [(name: String, value: String)] = [("host", "127.0.0.1:\(port)"),
                                                            ("content-type", "application/x-www-form-urlencoded")]
            headers += try signer.signatureHeaders(method: "POST", path: "/", query: [], headers: headers, payloadHash: hash, date: Date())
            let response = try await client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/", headers: headers, body: .bytes(body)))
            guard response.status == 200 else {
                throw MotoError("IAM \(form[0].1) answered \(response.status): \(String(decoding: response.body, as: UTF8.self).prefix(500))")
            }
            created = response.body
        }
        guard let id = S3XML.value("AccessKeyId", in: created), let secret = S3XML.value("SecretAccessKey", in: created),
              let credentials = S3Credentials(accessKeyID: id, secretAccessKey: secret) else {
            throw MotoError("IAM CreateAccessKey returned no key")
        }
        return credentials
    }

    /// A configuration for `bucket` on this server (or on `port`, e.g. a fault proxy in front of
    /// it): 5 MiB parts above a 5 MiB threshold, so an 11 MiB file is three parts (5, 5, 1 MiB).
    func configuration(bucket: String, prefix: String = "photos", port: UInt16? = nil, credentials: S3Credentials? = nil,
                       retries: Int = 0) throws -> S3Configuration {
        var configuration = try S3Configuration(destination: "s3://\(bucket)/\(prefix)", endpoint: "http://127.0.0.1:\(port ?? self.port)",
                                                credentials: credentials ?? self.credentials,
                                                multipartThreshold: 5 * 1024 * 1024, partSize: 5 * 1024 * 1024,
                                                maxRetriesPerUpload: retries, retryBackoff: .milliseconds(10))
        configuration.http.maxBodyBytes = 32 * 1024 * 1024  // whole objects come back in GETs
        configuration.http.stallTimeout = .seconds(5)
        return configuration
    }

    /// Creates a bucket with a fresh name and returns an uploader for it.
    func makeBucket(retries: Int = 0) async throws -> S3Uploader {
        let name = "photodrain-" + UUID().uuidString.lowercased().prefix(18)
        let uploader = S3Uploader(configuration: try configuration(bucket: String(name), retries: retries))
        let response = try await uploader.send("PUT", key: nil, body: .empty)
        guard response.status == 200 else { throw MotoError("CreateBucket answered \(response.status)") }
        return uploader
    }
}
