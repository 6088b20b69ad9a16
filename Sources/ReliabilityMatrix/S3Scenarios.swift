import FaultProxy
import Foundation

/// An S3-compatible store that keeps whatever bytes reach it (moto, like any store that does not
/// check the payload hash), behind a proxy that flips one bit of every request body. While the
/// proxy flips, no photo may be marked uploaded; once it stops, everything is uploaded, and
/// `verify --deep` (every object downloaded and hashed) finds every photo there with its bytes.
enum S3Scenarios {
    static func byteFlippingProxy(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("byte-flipping proxy in front of S3", context) { run, random, result in
            let library = try Library(root: context.workRoot + "/s3-flip-\(run)")
            defer { if !context.keep { library.remove() } }
            let tool = Tool(binary: context.binary, logs: library.logs)
            let moto = try Moto(logs: library.logs)
            defer { moto.stop() }
            let bucket = "flip-\(run)-\(context.seed)"
            try moto.createBucket(bucket)
            let flipping = FaultSwitch()
            let proxy = try FaultProxy(targetPort: moto.port, plan: FaultPlan { _ in flipping.isOn ? .flipBody(atByte: 700) : nil })
            defer { proxy.stop() }
            try library.addPhotos(context.photos, samples: context.samples, random: &random)
            let environment = ["AWS_ACCESS_KEY_ID": "matrix", "AWS_SECRET_ACCESS_KEY": "matrix-secret", "AWS_REGION": "us-east-1"]
            let destination = ["--to", "s3://\(bucket)/photos", "--s3-endpoint", "http://127.0.0.1:\(proxy.port)"]
            func photodrain(_ arguments: [String], _ name: String) throws -> (Int32, Child) {
                let child = try tool.start(arguments, name: name, environment: environment)
                return (child.wait(seconds: 240), child)
            }
            let drain = ["drain", library.folder, "--store", library.store, "--json", "--offline-timeout", "2"] + Rig.analysis + destination

            for attempt in 0..<2 {
                let (status, _) = try photodrain(drain, "drain")
                if status == 0 { result.failures.append("drain \(attempt) through the flipping proxy exited 0") }
            }
            result.faults += proxy.injectedFaults.count
            let (_, status) = try photodrain(["status", library.folder, "--store", library.store, "--json"], "status")
            let counts = (try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any]
            let marked = counts?["uploaded"] as? Int ?? -1
            if marked != 0 { result.failures.append("through the flipping proxy: \(marked) photos marked uploaded (want 0)") }

            flipping.turnOff()
            var statuses: [Int32] = []
            for _ in 0..<8 {
                let (code, _) = try photodrain(drain, "drain")
                statuses.append(code)
                if code == 0 { break }
                usleep(200_000)
            }
            if statuses.last != 0 { result.failures.append("drain statuses once the fault was gone \(statuses)") }

            let (verified, verify) = try photodrain(["verify", library.folder, "--store", library.store, "--deep", "--json"] + destination, "verify")
            let summary = verify.stdout.split(separator: "\n").last.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let present = summary?["present"] as? Int ?? 0
            let mismatched = summary?["mismatched"] as? Int ?? 0
            if verified != 0 { result.failures.append("verify --deep exited \(verified): \(verify.stdout.suffix(300))") }
            result.runs += 1
            result.photos += context.photos
            result.lost += max(0, context.photos - present - mismatched)
            result.corrupted += mismatched
            result.fileBytes += library.fileBytes
            result.uploadBytes += Int64(proxy.bytesForwarded(.upstream))
        }
    }
}

/// moto's S3 server on a free loopback port, from the Python Scripts/bootstrap set up
/// (`.build/venv`, or `PHOTODRAIN_MOTO_PYTHON`). It runs without authentication: the scenario
/// tests the bytes, not the signatures (the S3 tests check those).
final class Moto {
    let port: UInt16
    private let child: Child

    init(logs: String) throws {
        let candidates = [ProcessInfo.processInfo.environment["PHOTODRAIN_MOTO_PYTHON"],
                          FileManager.default.currentDirectoryPath + "/.build/venv/bin/python"].compactMap { $0 }
        guard let python = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw MatrixError("no Python with moto: run Scripts/bootstrap (it installs moto into .build/venv)")
        }
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        child = try Child(python, ["-c", """
            import time
            from moto.server import ThreadedMotoServer
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            print(server.get_host_and_port()[1], flush=True)
            while True:
                time.sleep(3600)
            """], logPrefix: logs + "/moto")
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let port = UInt16(child.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), port > 0 {
                self.port = port
                return
            }
            if !child.isRunning { break }
            usleep(50_000)
        }
        child.signal(SIGKILL)
        throw MatrixError("moto did not start: \(child.stderr.suffix(400))")
    }

    /// Creates `bucket` (an unsigned PUT through curl, which moto takes without authentication).
    func createBucket(_ bucket: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sf", "--max-time", "30", "-X", "PUT", "http://127.0.0.1:\(port)/\(bucket)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw MatrixError("CreateBucket on moto: curl exit \(process.terminationStatus)") }
    }

    func stop() {
        child.signal(SIGTERM)
        child.wait(seconds: 10)
    }
}
